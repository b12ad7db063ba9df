//! Skills (SEP-2640) on the thread runtime: listing reads only `skills/list`;
//! a skill's files are read when it is loaded or a file of it is read,
//! and handed over only verified. The rules are the core's
//! ([`rho_proto_core::features::skills`]); this is the waiting.

use rho_proto_core::features::skills::{LoadedSkill, SkillEntry, SkillListing};
use rho_proto_core::runtime::Cancel;
use rho_proto_core::runtime::skills::SkillError;

use crate::Runtime;

impl Runtime {
    /// Every skill `server` lists (`skills/list`, page by page), reading
    /// none of their files. Until it ends or `cancel` is cancelled.
    pub fn list_skills(&self, server: &str, cancel: &Cancel) -> Result<SkillListing, SkillError> {
        let mut listing = SkillListing::default();
        let mut next = Some(SkillListing::first_request());
        while let Some(request) = next {
            let page = self.request(server, request, cancel)?;
            next = listing
                .add_page(&page)
                .map_err(|reason| SkillError::malformed_listing(server, reason))?;
        }
        Ok(listing)
    }

    /// Loads the skill `entry` (from `server`'s listing): reads its
    /// `SKILL.md` now, verifies it against the entry (size, digest,
    /// frontmatter), and returns it; on any mismatch the content is
    /// dropped and the error names the check.
    pub fn load_skill(
        &self,
        server: &str,
        entry: &SkillEntry,
        cancel: &Cancel,
    ) -> Result<LoadedSkill, SkillError> {
        let refused = |check| SkillError::refused(server, entry.name(), check);
        let request = entry.load_request().map_err(refused)?;
        let result = self.request(server, request, cancel)?;
        entry.verify_load(&result).map_err(refused)
    }

    /// Reads the file `uri` of a loaded skill, verified against the entry
    /// it was loaded from; a file that entry does not list is refused
    /// unread.
    pub fn read_skill_file(
        &self,
        server: &str,
        skill: &LoadedSkill,
        uri: &str,
        cancel: &Cancel,
    ) -> Result<Vec<u8>, SkillError> {
        let refused = |check| SkillError::refused(server, skill.entry.name(), check);
        let request = skill.file_request(uri).map_err(refused)?;
        let result = self.request(server, request, cancel)?;
        skill.verify_file(uri, &result).map_err(refused)
    }
}
