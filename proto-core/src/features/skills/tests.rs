use base64::Engine as _;
use serde_json::{Value, json};

use super::*;

const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\nSkill body.\n";
const FORMS: &str = "Supporting content.\n";
const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";

fn file(uri: &str, content: &str) -> Value {
    json!({"uri": uri, "digest": Sha256Digest::of(content.as_bytes()).to_string(), "size": content.len()})
}

/// The entry the conformance suite lists, with `SKILL.md` listed as
/// `listed_skill_md` (digest and size).
fn entry_listing(listed_skill_md: &str) -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [file(SKILL_URI, listed_skill_md), file(FORMS_URI, FORMS)]
    })
}

fn entry() -> SkillEntry {
    SkillEntry::from_value(&entry_listing(SKILL_MD)).expect("valid entry")
}

fn read_result(uri: &str, text: &str) -> Value {
    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
}

#[test]
fn a_skill_md_that_matches_its_entry_loads_with_its_body() {
    let entry = entry();
    assert_eq!(entry.name(), "pdf-processing");
    assert_eq!(entry.root(), "skill://pdf-processing");
    let request = entry.load_request().expect("loadable");
    assert_eq!(request.method(), "resources/read");
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"uri": SKILL_URI})
    );
    let loaded = entry
        .verify_load(&read_result(SKILL_URI, SKILL_MD))
        .expect("verified");
    assert_eq!(loaded.text, SKILL_MD);
    assert_eq!(loaded.body(), "Skill body.\n");
}

#[test]
fn a_digest_mismatch_refuses_the_skill() {
    // Same length, other bytes: only the digest can tell.
    let tampered = SKILL_MD.replace("Skill body.", "Evil body!!");
    assert_eq!(tampered.len(), SKILL_MD.len());
    let error = entry()
        .verify_load(&read_result(SKILL_URI, &tampered))
        .unwrap_err();
    assert_eq!(
        error,
        SkillCheck::DigestMismatch {
            uri: SKILL_URI.into(),
            listed: Sha256Digest::of(SKILL_MD.as_bytes()),
            read: Sha256Digest::of(tampered.as_bytes()),
        }
    );
    assert!(
        error.to_string().starts_with(
            "`skill://pdf-processing/SKILL.md` failed digest verification: the entry lists sha256:"
        ),
        "{error}"
    );
}

#[test]
fn a_size_mismatch_refuses_the_skill_before_its_digest_is_computed() {
    let padded = format!("{SKILL_MD}extra bytes the entry did not account for\n");
    let error = entry()
        .verify_load(&read_result(SKILL_URI, &padded))
        .unwrap_err();
    assert_eq!(
        error,
        SkillCheck::SizeMismatch {
            uri: SKILL_URI.into(),
            listed: SKILL_MD.len() as u64,
            read: padded.len() as u64,
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "`{SKILL_URI}` failed size verification: the entry lists {} bytes, the server sent {}",
            SKILL_MD.len(),
            padded.len()
        )
    );
}

#[test]
fn a_frontmatter_mismatch_refuses_the_skill_though_digest_and_size_match() {
    // The conformance suite's case: the entry's digest and size are the
    // tampered file's, only its frontmatter copy is the original.
    let tampered = SKILL_MD.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let entry = SkillEntry::from_value(&entry_listing(&tampered)).unwrap();
    let error = entry
        .verify_load(&read_result(SKILL_URI, &tampered))
        .unwrap_err();
    assert_eq!(
        error,
        SkillCheck::FrontmatterMismatch {
            uri: SKILL_URI.into(),
            fields: vec!["description".into()],
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "`{SKILL_URI}` failed frontmatter verification: its frontmatter differs from the entry's in `description`"
        )
    );
    // A field only the file has is a difference too.
    let extra = SKILL_MD.replace("---\nSkill", "license: MIT\n---\nSkill");
    let entry = SkillEntry::from_value(&entry_listing(&extra)).unwrap();
    assert!(matches!(
        entry.verify_load(&read_result(SKILL_URI, &extra)),
        Err(SkillCheck::FrontmatterMismatch { fields, .. }) if fields == ["license"]
    ));
    // No frontmatter at all: nothing to compare, so no load.
    let bare = "Just a body.\n";
    let entry = SkillEntry::from_value(&entry_listing(bare)).unwrap();
    assert!(matches!(
        entry.verify_load(&read_result(SKILL_URI, bare)),
        Err(SkillCheck::Frontmatter { .. })
    ));
}

#[test]
fn nested_frontmatter_compares_field_by_field() {
    let text = "---\nname: pdf-processing\ndescription: 'Extract, fill, and assemble PDF documents'\nmetadata:\n  version: \"2.1.0\"\n---\nBody\n";
    let mut listing = entry_listing(text);
    listing["frontmatter"]["metadata"] = json!({"version": "2.1.0"});
    let entry = SkillEntry::from_value(&listing).unwrap();
    entry
        .verify_load(&read_result(SKILL_URI, text))
        .expect("same fields");
    listing["frontmatter"]["metadata"] = json!({"version": "2.2.0"});
    let entry = SkillEntry::from_value(&listing).unwrap();
    assert!(matches!(
        entry.verify_load(&read_result(SKILL_URI, text)),
        Err(SkillCheck::FrontmatterMismatch { fields, .. }) if fields == ["metadata"]
    ));
}

#[test]
fn a_blob_is_verified_as_its_decoded_bytes() {
    let blob = base64::engine::general_purpose::STANDARD.encode(SKILL_MD);
    let result = json!({"contents": [{"uri": SKILL_URI, "blob": blob}]});
    assert_eq!(entry().verify_load(&result).unwrap().text, SKILL_MD);
}

#[test]
fn an_answer_for_another_uri_or_with_several_bodies_is_refused() {
    let entry = entry();
    let other = read_result("skill://other/SKILL.md", SKILL_MD);
    assert!(matches!(
        entry.verify_load(&other),
        Err(SkillCheck::Unreadable { reason, .. }) if reason.contains("answered for `skill://other/SKILL.md`")
    ));
    let two = json!({"contents": [
        {"uri": SKILL_URI, "text": SKILL_MD}, {"uri": SKILL_URI, "text": SKILL_MD}
    ]});
    assert!(matches!(
        entry.verify_load(&two),
        Err(SkillCheck::Unreadable { reason, .. }) if reason.contains("2 bodies")
    ));
    assert!(matches!(
        entry.verify_load(&json!({})),
        Err(SkillCheck::Unreadable { .. })
    ));
}

#[test]
fn supporting_files_are_read_only_when_listed_and_are_verified() {
    let loaded = entry()
        .verify_load(&read_result(SKILL_URI, SKILL_MD))
        .unwrap();
    let request = loaded.file_request(FORMS_URI).expect("listed");
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"uri": FORMS_URI})
    );
    assert_eq!(
        loaded
            .verify_file(FORMS_URI, &read_result(FORMS_URI, FORMS))
            .unwrap(),
        FORMS.as_bytes()
    );
    assert!(matches!(
        loaded.verify_file(FORMS_URI, &read_result(FORMS_URI, "Changed content.\n")),
        Err(SkillCheck::SizeMismatch { .. })
    ));
    let unlisted = "skill://pdf-processing/references/NEW.md";
    assert_eq!(
        loaded.file_request(unlisted).unwrap_err(),
        SkillCheck::Unlisted {
            uri: unlisted.into()
        }
    );
    assert!(matches!(
        loaded.verify_file(unlisted, &read_result(unlisted, "x")),
        Err(SkillCheck::Unlisted { .. })
    ));
}

#[test]
fn dynamic_and_oversized_skills_are_declined_before_any_read() {
    let mut listing = entry_listing(SKILL_MD);
    listing["resources"] = json!("dynamic");
    let dynamic = SkillEntry::from_value(&listing).unwrap();
    assert_eq!(dynamic.files, SkillFiles::Dynamic);
    assert_eq!(dynamic.load_request().unwrap_err(), SkillCheck::Dynamic);
    assert_eq!(
        dynamic
            .verify_load(&read_result(SKILL_URI, SKILL_MD))
            .unwrap_err(),
        SkillCheck::Dynamic
    );

    let mut listing = entry_listing(SKILL_MD);
    listing["resources"][1]["size"] = json!(MAX_TOTAL_BYTES);
    let big = SkillEntry::from_value(&listing).unwrap();
    assert!(matches!(
        big.load_request(),
        Err(SkillCheck::TooLarge { files: 2, .. })
    ));

    let mut listing = entry_listing(SKILL_MD);
    let many: Vec<Value> = (0..MAX_FILES)
        .map(|i| file(&format!("skill://pdf-processing/f{i}"), ""))
        .chain([file(SKILL_URI, SKILL_MD)])
        .collect();
    listing["resources"] = Value::Array(many);
    let many = SkillEntry::from_value(&listing).unwrap();
    assert!(matches!(
        many.load_request(),
        Err(SkillCheck::TooLarge { files, .. }) if files == MAX_FILES + 1
    ));
}

#[test]
fn entries_that_break_the_shape_are_refused_saying_how() {
    type Breakage = fn(&mut Value);
    let cases: [(Breakage, &str); 9] = [
        (
            |e| drop(e.as_object_mut().unwrap().remove("resources")),
            "has no `resources`",
        ),
        (|e| e["resources"] = json!("static"), "neither an array nor"),
        (
            |e| e["resources"][0]["digest"] = json!("sha256:ABC"),
            "no `digest`",
        ),
        (
            |e| e["resources"][0]["digest"] = json!("md5:00"),
            "no `digest`",
        ),
        (
            |e| drop(e["resources"][1].as_object_mut().unwrap().remove("size")),
            "no byte `size`",
        ),
        (
            |e| e["resources"][1]["uri"] = json!("skill://other/x.md"),
            "outside the skill's directory",
        ),
        (|e| e["resources"][1]["uri"] = json!(SKILL_URI), "twice"),
        (
            |e| e["uri"] = json!("skill://pdf-processing/README.md"),
            "does not name a `SKILL.md`",
        ),
        (
            |e| {
                drop(
                    e["frontmatter"]
                        .as_object_mut()
                        .unwrap()
                        .remove("description"),
                )
            },
            "no string `description`",
        ),
    ];
    for (break_it, why) in cases {
        let mut listing = entry_listing(SKILL_MD);
        break_it(&mut listing);
        let error = SkillEntry::from_value(&listing).unwrap_err();
        assert!(error.0.contains(why), "{why}: {error}");
    }
    // A `SKILL.md` missing from its own `resources`.
    let mut listing = entry_listing(SKILL_MD);
    listing["resources"] = json!([file(FORMS_URI, FORMS)]);
    assert!(
        SkillEntry::from_value(&listing)
            .unwrap_err()
            .0
            .contains("do not list its `SKILL.md`")
    );
}

#[test]
fn a_listing_keeps_invalid_entries_apart_and_follows_cursors_until_one_repeats() {
    let mut listing = SkillListing::default();
    let first = SkillListing::first_request();
    assert_eq!(first.method(), "skills/list");
    assert_eq!(serde_json::to_value(&first).unwrap(), json!({}));
    let next = listing
        .add_page(&json!({
            "skills": [entry_listing(SKILL_MD), {"uri": "skill://broken/SKILL.md"}],
            "nextCursor": "2"
        }))
        .unwrap()
        .expect("a second page");
    assert_eq!(serde_json::to_value(&next).unwrap(), json!({"cursor": "2"}));
    assert_eq!(listing.skills, [entry()]);
    assert_eq!(listing.invalid.len(), 1);
    assert_eq!(
        listing.invalid[0].uri.as_deref(),
        Some("skill://broken/SKILL.md")
    );
    assert!(listing.by_uri(SKILL_URI).is_some());
    // The same cursor again: stop, and say the listing is partial.
    let again = listing
        .add_page(&json!({"skills": [], "nextCursor": "2"}))
        .unwrap();
    assert!(again.is_none());
    assert!(listing.truncated);
    let error = listing
        .add_page(&json!({"entries": []}))
        .expect_err("no skills array");
    assert!(error.0.contains("skills"), "{error}");
}

#[test]
fn digests_are_sha256_in_lowercase_hex() {
    let digest = Sha256Digest::of(b"");
    assert_eq!(
        digest.to_string(),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(Sha256Digest::parse(&digest.to_string()), Some(digest));
    assert_eq!(
        Sha256Digest::parse(
            &digest
                .to_string()
                .to_uppercase()
                .replace("SHA256", "sha256")
        ),
        None
    );
    assert_eq!(Sha256Digest::parse("sha256:e3b0"), None);
}
