//! A server's catalog: its prompts, resources and resource templates,
//! listed at connect and held for the session, so matching a `/` command
//! or an `@` fragment costs no round-trip.
//!
//! For a server that declares `prompts`, the session runs `prompts/list`;
//! for one that declares `resources`, `resources/list` and
//! `resources/templates/list`. Each listing follows `nextCursor` page by
//! page, bounded like `tools/list` (at most
//! [`crate::session::MAX_TOOL_PAGES`] pages, and a repeated cursor ends
//! it), and a malformed entry is skipped alone. A listing that fails
//! does not fail the server: tools still load, and the failure is
//! recorded in [`Listing::error`] for its status. A later
//! `notifications/prompts/list_changed` (or `resources/list_changed`,
//! which re-lists resources and templates both) lists again; a change
//! that arrives while a listing runs queues exactly one more, after it.
//! A re-listing that fails keeps the items listed before, with the error.
//!
//! At connect the catalog lists go one after another (prompts, then
//! resources, then templates), beside `tools/list` rather than all at
//! once: over Streamable HTTP each request in flight needs a connection of
//! its own, and four listings at once would open four connections that a
//! session of sequential calls never uses again. Two requests in flight
//! at connect cost two connections; the price is a round-trip per list
//! before ready, which a server offering no catalog does not pay.
//!
//! A list the server marked private (`cacheScope`, 2026 era) belongs to
//! the credential it was listed with. When the transport's credential
//! changes ([`Lister::credential_changed`]), a private list is dropped at
//! once (so no host serves another user's prompts meanwhile) and listed
//! again; a listing that ran across the change and turns out private is
//! not kept, and runs again.
//!
//! [`Lister`] is the pure bookkeeping: the session asks it what to send
//! and tells it what came back. Both protocol eras feed it the same way.

use std::collections::{BTreeSet, VecDeque};

use serde::Serialize;
use serde_json::Value;

use crate::features::prompts::Prompt;
use crate::features::resources::{Resource, ResourceTemplate};
use crate::wire::protocol::ShapeError;

/// Which list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CatalogKind {
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

impl CatalogKind {
    /// Every kind, in the order they are listed.
    pub const ALL: [CatalogKind; 3] = [
        CatalogKind::Prompts,
        CatalogKind::Resources,
        CatalogKind::Templates,
    ];

    /// The listing method.
    pub fn method(self) -> &'static str {
        match self {
            CatalogKind::Prompts => "prompts/list",
            CatalogKind::Resources => "resources/list",
            CatalogKind::Templates => "resources/templates/list",
        }
    }

    /// A last page with nothing in it: what a listing the server does not
    /// implement holds.
    pub fn empty_page(self) -> Value {
        let mut page = serde_json::Map::new();
        page.insert(self.field().to_owned(), Value::Array(Vec::new()));
        Value::Object(page)
    }

    /// The result's array field.
    fn field(self) -> &'static str {
        match self {
            CatalogKind::Prompts => "prompts",
            CatalogKind::Resources => "resources",
            CatalogKind::Templates => "resourceTemplates",
        }
    }

    fn index(self) -> usize {
        match self {
            CatalogKind::Prompts => 0,
            CatalogKind::Resources => 1,
            CatalogKind::Templates => 2,
        }
    }
}

/// One held list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Listing<T> {
    /// The server declared the capability, so the list was asked for.
    pub offered: bool,
    /// The items as last listed (empty until a listing succeeds).
    pub items: Vec<T>,
    /// Why the latest listing failed, if it did; `items` are then the
    /// ones listed before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Self {
            offered: false,
            items: Vec::new(),
            error: None,
        }
    }
}

/// A server's prompts, resources and templates as held for the session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Catalog {
    /// From `prompts/list`.
    pub prompts: Listing<Prompt>,
    /// From `resources/list`.
    pub resources: Listing<Resource>,
    /// From `resources/templates/list`.
    pub templates: Listing<ResourceTemplate>,
}

impl Catalog {
    /// One prompt by the server's name for it, or else by the form a
    /// terminal shows that name in (`crate::text::terminal::sanitize_line`):
    /// a name holding a control or BIDI character is never inserted or
    /// drawn raw, so a person can only type its escaped form. A shown form
    /// two prompts share names neither.
    pub fn prompt(&self, name: &str) -> Option<&Prompt> {
        if let Some(exact) = self.prompts.items.iter().find(|p| p.name == name) {
            return Some(exact);
        }
        let mut shown = self
            .prompts
            .items
            .iter()
            .filter(|p| crate::text::terminal::sanitize_line(&p.name) == name);
        match (shown.next(), shown.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// Every listing failure, as `<method>: <reason>`, for a status line.
    pub fn errors(&self) -> Vec<String> {
        [
            (CatalogKind::Prompts, &self.prompts.error),
            (CatalogKind::Resources, &self.resources.error),
            (CatalogKind::Templates, &self.templates.error),
        ]
        .into_iter()
        .filter_map(|(kind, error)| error.as_ref().map(|e| format!("{}: {e}", kind.method())))
        .collect()
    }
}

/// What the session sends next for a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// Which list.
    pub kind: CatalogKind,
    /// The cursor of the page, `None` for the first.
    pub cursor: Option<String>,
}

impl PageRequest {
    /// The request's params (`{"cursor": ...}`), none for the first page.
    pub fn params(&self) -> Option<CursorParams<'_>> {
        self.cursor.as_deref().map(|cursor| CursorParams { cursor })
    }
}

/// The params of a paginated list request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CursorParams<'a> {
    /// Where the page starts.
    pub cursor: &'a str,
}

/// What a listing's page did.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PageOutcome {
    /// Ask for the next page.
    Next(PageRequest),
    /// The listing ended (well or not) and the held catalog changed;
    /// `then` are listings to start at once: a re-listing queued while it
    /// ran, the next list of the connect-time sequence.
    Settled {
        /// First pages to send now, in order.
        then: Vec<PageRequest>,
    },
}

#[derive(Debug, Default)]
struct Run {
    pages: usize,
    seen: BTreeSet<String>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    /// A change arrived meanwhile: list once more after this one.
    again: bool,
    /// A page of it was marked private (`cacheScope`).
    private: bool,
    /// The credential changed while it ran: pages came under both.
    straddles: bool,
    /// Part of the connect-time sequence: its end starts the next list.
    sequence: bool,
}

/// The listings of one session: what is held and what runs.
#[derive(Debug, Default)]
pub struct Lister {
    held: Catalog,
    runs: [Option<Run>; 3],
    max_pages: usize,
    /// The connect-time lists not started yet, in order.
    waiting: VecDeque<CatalogKind>,
    /// Which held lists were marked private when listed.
    private: [bool; 3],
}

impl Lister {
    /// A lister that gives up on a listing past `max_pages` pages.
    pub fn new(max_pages: usize) -> Self {
        Self {
            max_pages,
            ..Self::default()
        }
    }

    /// The catalog as held now.
    pub fn catalog(&self) -> &Catalog {
        &self.held
    }

    /// Whether no listing runs or waits to run.
    pub fn settled(&self) -> bool {
        self.runs.iter().all(Option::is_none) && self.waiting.is_empty()
    }

    /// Whether the server offers this list (declared its capability).
    pub fn offers(&self, kind: CatalogKind) -> bool {
        match kind {
            CatalogKind::Prompts => self.held.prompts.offered,
            CatalogKind::Resources => self.held.resources.offered,
            CatalogKind::Templates => self.held.templates.offered,
        }
    }

    /// At connect: records what the server offers and returns the first
    /// page to send; the other offered lists follow one by one, each when
    /// the one before settles.
    pub fn start(&mut self, prompts: bool, resources: bool) -> Vec<PageRequest> {
        self.held.prompts.offered = prompts;
        self.held.resources.offered = resources;
        self.held.templates.offered = resources;
        self.waiting = CatalogKind::ALL
            .into_iter()
            .filter(|&kind| self.offers(kind))
            .collect();
        self.next_in_sequence().into_iter().collect()
    }

    /// Starts the next connect-time list, if one waits.
    fn next_in_sequence(&mut self) -> Option<PageRequest> {
        let kind = self.waiting.pop_front()?;
        let page = self.relist(kind);
        if let Some(run) = self.runs[kind.index()].as_mut() {
            run.sequence = true;
        }
        page
    }

    /// A list changed: the first page to send, or `None` when that list
    /// is not offered, waits its turn at connect (it is listed then), or
    /// a listing of it runs (then one more is queued).
    pub fn relist(&mut self, kind: CatalogKind) -> Option<PageRequest> {
        if !self.offers(kind) || self.waiting.contains(&kind) {
            return None;
        }
        match &mut self.runs[kind.index()] {
            Some(run) => {
                run.again = true;
                None
            }
            slot @ None => {
                *slot = Some(Run::default());
                Some(PageRequest { kind, cursor: None })
            }
        }
    }

    /// The page about to be handed to [`Lister::handle_page`] was marked
    /// private (`cacheScope`): the list belongs to the credential it was
    /// read with.
    pub fn mark_private(&mut self, kind: CatalogKind) {
        if let Some(run) = self.runs[kind.index()].as_mut() {
            run.private = true;
        }
    }

    /// The transport now sends another credential. Every held list that
    /// was private is dropped and listed again (its first page is
    /// returned to send); a listing running across the change is kept
    /// only if it turns out public, else it runs again. Returns whether
    /// the held catalog changed.
    pub fn credential_changed(&mut self) -> (bool, Vec<PageRequest>) {
        let mut changed = false;
        let mut pages = Vec::new();
        for kind in CatalogKind::ALL {
            let at = kind.index();
            if let Some(run) = self.runs[at].as_mut() {
                run.straddles = true;
            }
            if !std::mem::take(&mut self.private[at]) {
                continue;
            }
            changed = true;
            match kind {
                CatalogKind::Prompts => self.held.prompts.items.clear(),
                CatalogKind::Resources => self.held.resources.items.clear(),
                CatalogKind::Templates => self.held.templates.items.clear(),
            }
            pages.extend(self.relist(kind));
        }
        (changed, pages)
    }

    /// Startup ran out of time: every list running or waiting fails with
    /// `reason`, and nothing is queued after (the session becomes ready
    /// without them). Returns the lists that were running.
    pub fn abandon(&mut self, reason: &str) -> Vec<CatalogKind> {
        let mut running = Vec::new();
        let waiting: Vec<CatalogKind> = self.waiting.drain(..).collect();
        for kind in CatalogKind::ALL {
            if self.runs[kind.index()].take().is_some() {
                running.push(kind);
            } else if !waiting.contains(&kind) {
                continue;
            }
            self.record_failure(kind, reason.to_owned());
        }
        running
    }

    fn record_failure(&mut self, kind: CatalogKind, reason: String) {
        match kind {
            CatalogKind::Prompts => self.held.prompts.error = Some(reason),
            CatalogKind::Resources => self.held.resources.error = Some(reason),
            CatalogKind::Templates => self.held.templates.error = Some(reason),
        }
    }

    /// Takes in one page's answer (or why there is none). Entries that do
    /// not parse are returned to be reported; the others are kept.
    pub fn handle_page(
        &mut self,
        kind: CatalogKind,
        answer: Result<&Value, String>,
    ) -> (PageOutcome, Vec<ShapeError>) {
        let mut rejected = Vec::new();
        let Some(run) = self.runs[kind.index()].as_mut() else {
            return (PageOutcome::Settled { then: Vec::new() }, rejected);
        };
        let page = answer.and_then(|value| {
            let Some(Value::Array(entries)) = value.get(kind.field()) else {
                return Err(format!(
                    "the {} result has no `{}` array",
                    kind.method(),
                    kind.field()
                ));
            };
            for entry in entries {
                let read = match kind {
                    CatalogKind::Prompts => Prompt::from_value(entry).map(|p| run.prompts.push(p)),
                    CatalogKind::Resources => {
                        Resource::from_value(entry).map(|r| run.resources.push(r))
                    }
                    CatalogKind::Templates => {
                        ResourceTemplate::from_value(entry).map(|t| run.templates.push(t))
                    }
                };
                if let Err(e) = read {
                    rejected.push(e);
                }
            }
            Ok(value
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned))
        });
        run.pages += 1;
        let outcome = match page {
            Err(reason) => self.finish(kind, Err(reason)),
            Ok(Some(cursor)) if run.pages >= self.max_pages || !run.seen.insert(cursor.clone()) => {
                let pages = run.pages;
                self.finish(
                    kind,
                    Err(format!(
                        "{} kept paginating (page {pages} repeated a cursor or passed {} pages)",
                        kind.method(),
                        self.max_pages
                    )),
                )
            }
            Ok(Some(cursor)) => PageOutcome::Next(PageRequest {
                kind,
                cursor: Some(cursor),
            }),
            Ok(None) => self.finish(kind, Ok(())),
        };
        (outcome, rejected)
    }

    /// Ends the listing that runs for `kind`, with `reason` as its
    /// failure (no answer in time, the transport failed).
    pub fn fail(&mut self, kind: CatalogKind, reason: String) -> PageOutcome {
        if self.runs[kind.index()].is_none() {
            return PageOutcome::Settled { then: Vec::new() };
        }
        self.finish(kind, Err(reason))
    }

    fn finish(&mut self, kind: CatalogKind, result: Result<(), String>) -> PageOutcome {
        let Some(mut run) = self.runs[kind.index()].take() else {
            return PageOutcome::Settled { then: Vec::new() };
        };
        match result {
            // Read partly under a credential no longer sent, and private:
            // not this credential's list. It runs again.
            Ok(()) if run.straddles && run.private => run.again = true,
            Ok(()) => {
                self.private[kind.index()] = run.private;
                match kind {
                    CatalogKind::Prompts => {
                        self.held.prompts.items = run.prompts;
                        self.held.prompts.error = None;
                    }
                    CatalogKind::Resources => {
                        self.held.resources.items = run.resources;
                        self.held.resources.error = None;
                    }
                    CatalogKind::Templates => {
                        self.held.templates.items = run.templates;
                        self.held.templates.error = None;
                    }
                }
            }
            Err(reason) => self.record_failure(kind, reason),
        }
        let mut then: Vec<PageRequest> = run
            .again
            .then(|| self.relist(kind))
            .into_iter()
            .flatten()
            .collect();
        if run.sequence {
            then.extend(self.next_in_sequence());
        }
        PageOutcome::Settled { then }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(kind: CatalogKind) -> PageRequest {
        PageRequest { kind, cursor: None }
    }

    fn named(name: &str) -> Prompt {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
        }
    }

    #[test]
    fn a_prompt_is_found_by_its_name_or_by_its_escaped_form_when_unique() {
        let mut catalog = Catalog::default();
        catalog.prompts.items = vec![
            named("evil\x1b]0;pwned\x07\u{202e}"),
            named("twin\x1b"),
            named("twin\x1b"),
            named("plain"),
        ];
        assert_eq!(
            catalog.prompt("plain").map(|p| p.name.as_str()),
            Some("plain")
        );
        assert_eq!(
            catalog
                .prompt("evil\\x1b]0;pwned\\x07\\u{202e}")
                .map(|p| p.name.as_str()),
            Some("evil\x1b]0;pwned\x07\u{202e}"),
        );
        assert!(
            catalog.prompt("twin\\x1b").is_none(),
            "ambiguous escaped form"
        );
        assert!(
            catalog.prompt("twin\x1b").is_some(),
            "the exact name still works"
        );
        assert!(catalog.prompt("missing").is_none());
    }

    #[test]
    fn only_declared_lists_are_asked_for() {
        let mut lister = Lister::new(10);
        assert_eq!(
            lister.start(true, false),
            [first(CatalogKind::Prompts)],
            "no resources capability: neither resource list"
        );
        assert!(!lister.settled());
        assert_eq!(lister.relist(CatalogKind::Resources), None);
        let mut both = Lister::new(10);
        assert_eq!(
            both.start(true, true),
            [first(CatalogKind::Prompts)],
            "one list at a time at connect"
        );
        let mut none = Lister::new(10);
        assert!(none.start(false, false).is_empty());
        assert!(none.settled());
    }

    #[test]
    fn pages_are_followed_until_no_cursor() {
        let mut lister = Lister::new(10);
        lister.start(true, false);
        let (next, rejected) = lister.handle_page(
            CatalogKind::Prompts,
            Ok(&json!({"prompts": [{"name": "a"}, {"title": "nameless"}], "nextCursor": "2"})),
        );
        assert_eq!(rejected.len(), 1, "a malformed prompt is skipped alone");
        assert_eq!(
            next,
            PageOutcome::Next(PageRequest {
                kind: CatalogKind::Prompts,
                cursor: Some("2".into())
            })
        );
        let PageOutcome::Next(page) = &next else {
            panic!()
        };
        assert_eq!(
            serde_json::to_value(page.params()).expect("json"),
            json!({"cursor": "2"})
        );
        assert!(
            lister.catalog().prompts.items.is_empty(),
            "held only when done"
        );
        let (done, _) = lister.handle_page(
            CatalogKind::Prompts,
            Ok(&json!({"prompts": [{"name": "b"}]})),
        );
        assert_eq!(done, PageOutcome::Settled { then: vec![] });
        let names: Vec<&str> = lister
            .catalog()
            .prompts
            .items
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(lister.settled());
    }

    #[test]
    fn a_repeated_cursor_or_too_many_pages_fails_the_listing_only() {
        let mut lister = Lister::new(3);
        lister.start(false, true);
        let page = json!({"resources": [], "nextCursor": "same"});
        let (next, _) = lister.handle_page(CatalogKind::Resources, Ok(&page));
        assert!(matches!(next, PageOutcome::Next(_)));
        let (done, _) = lister.handle_page(CatalogKind::Resources, Ok(&page));
        assert_eq!(
            done,
            PageOutcome::Settled {
                then: vec![first(CatalogKind::Templates)]
            },
            "the failure ends this listing alone"
        );
        let error = lister.catalog().resources.error.clone().expect("failed");
        assert!(error.contains("kept paginating"), "{error}");
        assert_eq!(
            lister.catalog().errors(),
            [format!("resources/list: {error}")]
        );

        let mut bounded = Lister::new(2);
        bounded.start(false, true);
        settle(
            &mut bounded,
            CatalogKind::Resources,
            json!({"resources": []}),
        );
        for n in 0..2 {
            let page = json!({"resourceTemplates": [], "nextCursor": format!("c{n}")});
            let _ = bounded.handle_page(CatalogKind::Templates, Ok(&page));
        }
        assert!(bounded.catalog().templates.error.is_some());
    }

    #[test]
    fn a_failed_relisting_keeps_the_items_from_before() {
        let mut lister = Lister::new(10);
        lister.start(true, false);
        let _ = lister.handle_page(
            CatalogKind::Prompts,
            Ok(&json!({"prompts": [{"name": "a"}]})),
        );
        assert_eq!(
            lister.relist(CatalogKind::Prompts),
            Some(first(CatalogKind::Prompts))
        );
        let outcome = lister.fail(CatalogKind::Prompts, "no answer in time".into());
        assert_eq!(outcome, PageOutcome::Settled { then: vec![] });
        assert_eq!(lister.catalog().prompts.items.len(), 1);
        assert_eq!(
            lister.catalog().prompts.error.as_deref(),
            Some("no answer in time")
        );
        let _ = lister.handle_page(CatalogKind::Prompts, Ok(&json!({"prompts": []})));
        assert_eq!(
            lister.catalog().prompts.items.len(),
            1,
            "nothing runs: a late answer changes nothing"
        );
    }

    #[test]
    fn a_change_during_a_listing_queues_exactly_one_more() {
        let mut lister = Lister::new(10);
        lister.start(true, false);
        assert_eq!(lister.relist(CatalogKind::Prompts), None, "queued");
        assert_eq!(lister.relist(CatalogKind::Prompts), None, "still one");
        let (done, _) = lister.handle_page(CatalogKind::Prompts, Ok(&json!({"prompts": []})));
        assert_eq!(
            done,
            PageOutcome::Settled {
                then: vec![first(CatalogKind::Prompts)]
            }
        );
        let (done, _) = lister.handle_page(CatalogKind::Prompts, Ok(&json!({"prompts": []})));
        assert_eq!(done, PageOutcome::Settled { then: vec![] });
    }

    #[test]
    fn a_result_without_its_array_is_a_failure() {
        let mut lister = Lister::new(10);
        lister.start(false, true);
        settle(
            &mut lister,
            CatalogKind::Resources,
            json!({"resources": []}),
        );
        let _ = lister.handle_page(CatalogKind::Templates, Ok(&json!({"templates": []})));
        let error = lister.catalog().templates.error.clone().expect("failed");
        assert!(error.contains("resourceTemplates"), "{error}");
    }

    fn settle(lister: &mut Lister, kind: CatalogKind, page: Value) -> PageOutcome {
        lister.handle_page(kind, Ok(&page)).0
    }

    #[test]
    fn at_connect_the_lists_go_one_after_another() {
        let mut lister = Lister::new(10);
        assert_eq!(lister.start(true, true), [first(CatalogKind::Prompts)]);
        // A change to a list not started yet: it is listed in its turn.
        assert_eq!(lister.relist(CatalogKind::Templates), None);
        let done = settle(&mut lister, CatalogKind::Prompts, json!({"prompts": []}));
        assert_eq!(
            done,
            PageOutcome::Settled {
                then: vec![first(CatalogKind::Resources)]
            }
        );
        assert!(!lister.settled(), "templates still wait");
        // A failed list does not stop the sequence.
        let done = lister.fail(CatalogKind::Resources, "no answer".into());
        assert_eq!(
            done,
            PageOutcome::Settled {
                then: vec![first(CatalogKind::Templates)]
            }
        );
        let done = settle(
            &mut lister,
            CatalogKind::Templates,
            json!({"resourceTemplates": []}),
        );
        assert_eq!(done, PageOutcome::Settled { then: vec![] }, "once only");
        assert!(lister.settled());
    }

    #[test]
    fn abandoning_startup_fails_running_and_waiting_lists_and_queues_nothing() {
        let mut lister = Lister::new(10);
        lister.start(true, true);
        assert_eq!(lister.relist(CatalogKind::Prompts), None, "queued again");
        assert_eq!(lister.abandon("out of time"), [CatalogKind::Prompts]);
        assert!(lister.settled(), "nothing runs, nothing waits");
        let errors = lister.catalog().errors();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors.iter().all(|e| e.ends_with(": out of time")));
    }

    #[test]
    fn a_new_credential_drops_and_relists_private_lists_only() {
        let mut lister = Lister::new(10);
        lister.start(true, true);
        lister.mark_private(CatalogKind::Prompts);
        settle(
            &mut lister,
            CatalogKind::Prompts,
            json!({"prompts": [{"name": "mine"}]}),
        );
        settle(
            &mut lister,
            CatalogKind::Resources,
            json!({"resources": [{"uri": "a://x", "name": "x"}]}),
        );
        settle(
            &mut lister,
            CatalogKind::Templates,
            json!({"resourceTemplates": []}),
        );
        assert!(lister.settled());
        let (changed, pages) = lister.credential_changed();
        assert!(changed);
        assert_eq!(
            pages,
            [first(CatalogKind::Prompts)],
            "the private list only"
        );
        assert!(
            lister.catalog().prompts.items.is_empty(),
            "not served meanwhile"
        );
        assert_eq!(lister.catalog().resources.items.len(), 1, "public: kept");
        settle(
            &mut lister,
            CatalogKind::Prompts,
            json!({"prompts": [{"name": "yours"}]}),
        );
        assert_eq!(lister.catalog().prompts.items[0].name, "yours");
        // Listed public this time: a further change leaves it alone.
        assert_eq!(lister.credential_changed(), (false, vec![]));
        assert_eq!(lister.catalog().prompts.items.len(), 1);
    }

    #[test]
    fn a_private_listing_that_ran_across_a_credential_change_runs_again() {
        let mut lister = Lister::new(10);
        lister.start(true, false);
        let next = settle(
            &mut lister,
            CatalogKind::Prompts,
            json!({"prompts": [{"name": "old"}], "nextCursor": "2"}),
        );
        assert!(matches!(next, PageOutcome::Next(_)));
        assert_eq!(
            lister.credential_changed(),
            (false, vec![]),
            "nothing held yet"
        );
        lister.mark_private(CatalogKind::Prompts);
        let done = settle(
            &mut lister,
            CatalogKind::Prompts,
            json!({"prompts": [{"name": "new"}]}),
        );
        assert_eq!(
            done,
            PageOutcome::Settled {
                then: vec![first(CatalogKind::Prompts)]
            }
        );
        assert!(
            lister.catalog().prompts.items.is_empty(),
            "the mixed list is not kept"
        );
        lister.mark_private(CatalogKind::Prompts);
        settle(
            &mut lister,
            CatalogKind::Prompts,
            json!({"prompts": [{"name": "new"}]}),
        );
        assert_eq!(lister.catalog().prompts.items.len(), 1);
        // A public listing across a change is kept as it is.
        let mut public = Lister::new(10);
        public.start(true, false);
        public.credential_changed();
        let done = settle(
            &mut public,
            CatalogKind::Prompts,
            json!({"prompts": [{"name": "p"}]}),
        );
        assert_eq!(done, PageOutcome::Settled { then: vec![] });
        assert_eq!(public.catalog().prompts.items.len(), 1);
    }
}
