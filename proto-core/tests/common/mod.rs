//! What several test files share: [`Capture`], a tracing subscriber that
//! keeps every event's level and message, for tests that pin what is
//! logged and at which level.

use std::sync::{Arc, Mutex};

/// Collects every tracing event's level and message.
#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl Capture {
    /// Every event so far: its level and message.
    pub(crate) fn lines(&self) -> Vec<(tracing::Level, String)> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if let Ok(mut lines) = self.0.lock() {
            lines.push((*event.metadata().level(), message.0));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
