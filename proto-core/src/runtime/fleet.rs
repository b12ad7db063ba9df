//! The servers of one runtime with what its executor keeps for each running
//! session: the part of a runtime that does not depend on how sessions are
//! driven, written once for both executors.
//!
//! An executor's runtime is a [`Fleet`] of its own handles (a thread, a
//! task) plus the spawning and waiting that differ between them. The fleet
//! owns the [`Inventory`] (configuration, outcomes, tools), the handle of
//! each running session, the options the runtime was started with and the
//! call tickets; it answers the questions every call and every start asks
//! the same way on both executors: where a call goes and whether its
//! server runs, what a server started late is started with, what a
//! stopped one leaves behind, and what an error may say.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::Config;
use crate::host::RuntimeOptions;
use crate::runtime::driving::{Heard, StartupStep, StartupWait};
use crate::runtime::{
    CallTarget, Health, Inventory, ServerView, Sessions, SlotId, StartServerError, ToolCallError,
    late_config,
};

/// What an executor keeps for one running session.
pub trait SessionHandle {
    /// Where the session's driver writes its health.
    fn health_cell(&self) -> &Mutex<Health>;

    /// Asks the session to close, without waiting for it to end.
    fn close(&self);

    /// What the session last reported (a poisoned cell is read as it
    /// stands: health is a report, not an invariant).
    fn health(&self) -> Health {
        match self.health_cell().lock() {
            Ok(health) => health.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// Every configured server of one runtime, and the executor's handle `H`
/// of each running session.
pub struct Fleet<H> {
    inventory: Inventory,
    handles: BTreeMap<SlotId, H>,
    next_ticket: AtomicU64,
    /// The ambient environment, shared by every server's session.
    ambient: Arc<Vec<(String, String)>>,
    /// What the runtime was started with (its ambient moved out), for a
    /// server started later.
    options: RuntimeOptions,
}

/// What a start needs of a fleet at once: the inventory to record in, the
/// handles to add to, and what every session is started with.
pub struct Starting<'a, H> {
    /// The servers, their outcomes and tools.
    pub inventory: &'a mut Inventory,
    /// The running sessions' handles.
    pub handles: &'a mut BTreeMap<SlotId, H>,
    /// The ambient environment.
    pub ambient: &'a Arc<Vec<(String, String)>>,
    /// The runtime's options.
    pub options: &'a RuntimeOptions,
}

/// The wait for the sessions a [`Starting`] spawned, each within its
/// budget ([`StartupWait`]): what the fleet does itself (close a server
/// when rho is stopping, take a failed one's handle, record the end of
/// startup) is done here, and the executor only waits and stops.
pub struct Waiting<'a, H> {
    inventory: &'a mut Inventory,
    handles: &'a mut BTreeMap<SlotId, H>,
    wait: StartupWait,
}

/// What the executor does next while its servers start.
pub enum WaitStep<H> {
    /// Wait for `slot`'s startup report until `until` (or the host's
    /// interrupt), then tell [`Waiting::heard`] what came.
    Wait {
        /// The server.
        slot: SlotId,
        /// When to stop waiting.
        until: Instant,
    },
    /// A server that failed to start: stop its session and wait for it.
    Stop(H),
}

impl<'a, H: SessionHandle> Starting<'a, H> {
    /// The wait for what this start spawned (its handles added).
    pub fn wait(self) -> Waiting<'a, H> {
        Waiting {
            wait: StartupWait::new(self.inventory),
            inventory: self.inventory,
            handles: self.handles,
        }
    }
}

impl<H: SessionHandle> Waiting<'_, H> {
    /// What to do next, at `now`; `None` once every server is accounted
    /// for and the tool registry is built.
    pub fn step(&mut self, now: Instant) -> Option<WaitStep<H>> {
        loop {
            let Some(step) = self.wait.next(self.inventory, now) else {
                self.inventory.finish_startup();
                return None;
            };
            match step {
                StartupStep::Wait { slot, until } => return Some(WaitStep::Wait { slot, until }),
                StartupStep::Close(slot) => {
                    if let Some(handle) = self.handles.get(&slot) {
                        handle.close();
                    }
                }
                StartupStep::Stop(slot) => {
                    if let Some(handle) = self.handles.remove(&slot) {
                        return Some(WaitStep::Stop(handle));
                    }
                }
            }
        }
    }

    /// What the wait for `slot` came to.
    pub fn heard(&mut self, slot: SlotId, heard: Heard) {
        self.wait.heard(self.inventory, slot, heard);
    }
}

impl<H: SessionHandle> Fleet<H> {
    /// The servers of `config` that `select` accepts, none started yet:
    /// the secrets of the ambient environment and of the host's book are
    /// learnt for redaction, and the ambient environment is shared.
    pub fn new(
        config: &Config,
        mut options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
    ) -> Self {
        let mut inventory = Inventory::new(config, select);
        inventory.learn_secrets(&options.ambient);
        inventory.learn_from(&options.host.secrets);
        let ambient = Arc::new(std::mem::take(&mut options.ambient));
        Self {
            inventory,
            handles: BTreeMap::new(),
            next_ticket: AtomicU64::new(0),
            ambient,
            options,
        }
    }

    /// The parts a start works on.
    pub fn starting(&mut self) -> Starting<'_, H> {
        Starting {
            inventory: &mut self.inventory,
            handles: &mut self.handles,
            ambient: &self.ambient,
            options: &self.options,
        }
    }

    /// Lists server `id` of `config` to start beside the running ones,
    /// with its entry in `config` (a login's token applied, say); the
    /// executor then starts what the inventory lists.
    pub fn start_later(&mut self, id: &str, config: &Config) -> Result<(), StartServerError> {
        let server = late_config(config, id)?;
        let handles = &self.handles;
        self.inventory
            .start_later(id, server, &self.ambient, |slot| {
                handles.contains_key(&slot)
            })?;
        Ok(())
    }

    /// Server `id` as it stands after a late start.
    pub fn started(&self, id: &str) -> Result<ServerView, StartServerError> {
        self.server(id)
            .ok_or_else(|| StartServerError::Unknown(id.to_owned()))
    }

    /// Takes the handle of server `id`'s session for the executor to stop;
    /// [`Fleet::stopped`] records the end. `None` when it has no session.
    pub fn take(&mut self, id: &str) -> Option<(SlotId, H)> {
        let slot = self.inventory.find(id)?;
        let handle = self.handles.remove(&slot)?;
        Some((slot, handle))
    }

    /// Records that the session of `slot`, taken to stop, has ended: the
    /// server is `NotStarted` again and its tools leave the registry.
    pub fn stopped(&mut self, slot: SlotId) {
        self.inventory.record_stopped(slot);
    }

    /// Asks every running session to close at once, so that their
    /// shutdowns overlap, and takes their handles for the executor to wait
    /// for each.
    pub fn close_all(&mut self) -> impl Iterator<Item = H> + use<H> {
        for handle in self.handles.values() {
            handle.close();
        }
        std::mem::take(&mut self.handles).into_values()
    }

    /// Where a tool call goes: the server's slot, the server's own tool
    /// name, and its session's handle; or why it cannot go.
    pub(crate) fn route(
        &self,
        target: CallTarget<'_>,
    ) -> Result<(SlotId, String, &H), ToolCallError> {
        let (slot, tool) = self.inventory.route(target, |slot| self.health_of(slot))?;
        Ok((slot, tool, self.running(slot)?))
    }

    /// Where a request to `server` goes: its slot and session handle.
    pub(crate) fn route_server(&self, server: &str) -> Result<(SlotId, &H), ToolCallError> {
        let slot = self
            .inventory
            .route_server(server, |slot| self.health_of(slot))?;
        Ok((slot, self.running(slot)?))
    }

    /// The identity of the server in `slot`.
    pub(crate) fn server_id(&self, slot: SlotId) -> &str {
        self.inventory.id(slot).unwrap_or_default()
    }

    /// The handle of `slot`'s session, or the error of a server whose
    /// session has ended.
    fn running(&self, slot: SlotId) -> Result<&H, ToolCallError> {
        self.handles.get(&slot).ok_or_else(|| self.ended(slot))
    }

    /// The error of a call or request whose session ended before it was
    /// answered (its driver gone).
    pub fn ended(&self, slot: SlotId) -> ToolCallError {
        ToolCallError::ServerNotReady {
            server: self.inventory.id(slot).unwrap_or_default().to_owned(),
            reason: "its session has ended".into(),
        }
    }

    /// A ticket for the next call or request, unique in this runtime.
    pub fn ticket(&self) -> u64 {
        self.next_ticket.fetch_add(1, Ordering::Relaxed)
    }

    /// `error` of a call to `slot`'s server with the secrets it may carry
    /// redacted.
    pub fn redact(&self, slot: SlotId, error: ToolCallError) -> ToolCallError {
        self.inventory.redact_call_error(slot, error)
    }

    /// The runtime's options.
    pub fn options(&self) -> &RuntimeOptions {
        &self.options
    }
}

impl<H: SessionHandle> Sessions for Fleet<H> {
    fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    fn health_of(&self, slot: SlotId) -> Option<Health> {
        self.handles.get(&slot).map(SessionHandle::health)
    }
}
