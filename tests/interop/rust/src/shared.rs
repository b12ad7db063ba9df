//! What the interop rmcp binaries share (`interop-rmcp`, `tasks-rmcp`,
//! `watched-rmcp`; each includes this file): the record file, a JSON
//! object for rmcp's schema fields, and serving one server on stdio.

#![allow(dead_code)] // Each binary uses what it needs.

use std::io::Write;
use std::sync::Arc;

use rmcp::model::JsonObject;
use rmcp::{RoleServer, Service, ServiceExt};
use serde_json::Value;

/// Appends `line` to the file named by INTEROP_RECORD (if set).
pub fn record(line: &str) {
    if let Ok(path) = std::env::var("INTEROP_RECORD") {
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            eprintln!("record to {path}: {e}");
        }
    }
    eprintln!("record: {line}");
}

/// `value` as a JSON object (an empty one when it is not an object).
pub fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// Serves `server` on stdio until the client goes, saying so on stderr
/// as `name`.
pub async fn serve_stdio<S: Service<RoleServer>>(server: S, name: &str) -> std::io::Result<()> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    eprintln!("{name} on stdio");
    running
        .waiting()
        .await
        .map(drop)
        .map_err(std::io::Error::other)
}
