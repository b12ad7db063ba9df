//! [`Sessions`]: what an executor's runtime shows of its servers, written
//! once over the [`Inventory`] both executors keep and the [`Health`]
//! their sessions report. An executor implements the two accessors; the
//! views, the registry, the current tools and the instructions come from
//! here, the same on both.

use super::registry::{ExportedTool, ToolRegistry};
use super::{Health, Inventory, ServerView, SlotId};

/// The servers of a running executor, as a host reads them.
pub trait Sessions {
    /// The servers' configuration, outcomes and tools.
    fn inventory(&self) -> &Inventory;

    /// What the session of `slot` last reported, while it has one.
    fn health_of(&self, slot: SlotId) -> Option<Health>;

    /// Every configured server, in configuration order.
    fn servers(&self) -> Vec<ServerView> {
        self.inventory().servers(|slot| self.health_of(slot))
    }

    /// One server, by identity.
    fn server(&self, id: &str) -> Option<ServerView> {
        let slot = self.inventory().find(id)?;
        self.inventory().view(slot, self.health_of(slot))
    }

    /// The exported tools of every ready server, as registered at startup.
    fn tools(&self) -> &ToolRegistry {
        self.inventory().tools()
    }

    /// The exported tools as the next turn should see them: revised
    /// definitions after `tools/list_changed`, withdrawn tools marked.
    fn current_tools(&self) -> Vec<ExportedTool> {
        self.inventory().current_tools(|slot| self.health_of(slot))
    }

    /// The system-prompt text of every server's instructions, each fenced
    /// and labelled as documentation from that server.
    fn instructions_prompt(&self) -> Option<String> {
        self.inventory().instructions_prompt()
    }
}
