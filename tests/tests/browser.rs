//! The browser driver (`tests/browser/drive.mjs`, through
//! [`rho_tests::drive_browser`]) on a page shaped like an MCP App's: a host
//! page on one loopback origin embeds a proxy page from a second one,
//! which embeds the view as a sandboxed `srcdoc` iframe (an opaque
//! origin). The servers are this test's own, so what it pins is the
//! driver: nested frames searched, clicks landing there, screenshots
//! written, cross-origin access answered as the browser's error, and no
//! name resolved but loopback.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::json;

/// Serves `page(path)` (HTML, or 404 when `None`) on a loopback port the
/// kernel picks, one connection at a time, for the rest of the process.
fn serve(page: impl Fn(&str) -> Option<String> + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            answer(stream, &page);
        }
    });
    port
}

/// Reads one request's head and answers it, closing the connection.
fn answer(mut stream: TcpStream, page: &impl Fn(&str) -> Option<String>) {
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The rest of the head; a GET has no body.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/");
    let (status, body) = match page(path) {
        Some(body) => ("200 OK", body),
        None => ("404 Not Found", "not here".to_owned()),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The view: a sandboxed srcdoc frame (scripts only, so an opaque
/// origin, as an MCP Apps sandbox proxy makes it) whose button changes
/// its text and logs.
const VIEW: &str = "<p id=state>view ready</p>\
    <button onclick=&quot;document.getElementById('state').textContent='view clicked';\
    console.log('the view was clicked')&quot;>Press me</button>";

#[test]
fn the_driver_reaches_a_view_nested_two_origins_deep_and_is_refused_its_parents() {
    if !rho_tests::can_drive_browser() {
        return;
    }
    let proxy_port = serve(|path| {
        (path == "/proxy").then(|| {
            format!(
                "<!doctype html><title>proxy</title><p>sandbox proxy</p>\
                 <iframe sandbox=\"allow-scripts\" srcdoc=\"{VIEW}\"></iframe>"
            )
        })
    });
    let host_port = serve(move |path| {
        (path == "/").then(|| {
            format!(
                "<!doctype html><title>host</title><p>host page</p>\
                 <iframe src=\"http://127.0.0.1:{proxy_port}/proxy\"></iframe>"
            )
        })
    });
    let host = format!("http://127.0.0.1:{host_port}/");
    let shot = rho_tests::scratch_dir("browser-nested").join("page.png");
    let steps = json!({
        "timeoutMs": 15000,
        "steps": [
            {"op": "goto", "url": host},
            {"op": "waitText", "text": "view ready"},
            {"op": "click", "text": "Press me", "frame": "srcdoc"},
            {"op": "waitText", "text": "view clicked", "frame": "srcdoc"},
            {"op": "readText"},
            {"op": "screenshot", "path": shot},
            {"op": "evaluate", "frame": "srcdoc",
             "expression": "parent.parent.document.body.innerHTML"},
            {"op": "evaluate", "frame": "/proxy", "expression": "document.title"},
            {"op": "fetch", "from": "node", "url": host},
            {"op": "fetch", "from": "page", "frame": "/proxy", "url": host},
            {"op": "fetch", "from": "page", "url": "https://unpkg.com/"},
        ],
    });
    let result = rho_tests::drive_browser(&steps).unwrap_or_else(|e| panic!("{e}"));
    let step = |i: usize| &result["steps"][i];
    assert_eq!(step(0)["status"], 200, "{result:#}");
    assert_eq!(
        step(1)["frame"],
        "about:srcdoc",
        "found in the nested view: {result:#}"
    );
    assert_eq!(step(2)["frame"], "about:srcdoc", "{result:#}");

    let frames = step(4)["frames"].as_array().expect("frames");
    let texts: Vec<(&str, &str)> = frames
        .iter()
        .map(|f| {
            (
                f["url"].as_str().unwrap_or(""),
                f["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(texts.len(), 3, "host, proxy, view: {texts:?}");
    assert_eq!(texts[0], (host.as_str(), "host page"));
    assert!(
        texts[1].0.ends_with("/proxy") && texts[1].1 == "sandbox proxy",
        "{texts:?}"
    );
    assert!(texts[2].1.starts_with("view clicked"), "{texts:?}");

    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert_eq!(step(5)["bytes"], png.len());

    let refused = step(6)["error"].as_str().unwrap_or_default();
    assert!(
        refused.starts_with("SecurityError") && step(6).get("value").is_none(),
        "the view cannot read its host page: {result:#}"
    );
    assert_eq!(step(7)["value"], "proxy", "{result:#}");
    assert_eq!(step(8)["status"], 200);
    assert!(
        step(8)["body"]
            .as_str()
            .is_some_and(|b| b.contains(&format!(":{proxy_port}/proxy"))),
        "{result:#}"
    );
    assert!(
        step(9)["error"]
            .as_str()
            .is_some_and(|e| e.contains("Failed to fetch")),
        "the proxy's origin may not read the host's (no CORS): {result:#}"
    );

    assert!(
        step(10)["error"].is_string(),
        "no name but loopback resolves: {result:#}"
    );

    let console = result["console"].as_array().expect("console");
    assert!(
        console
            .iter()
            .any(|m| m["text"] == "the view was clicked" && m["url"] == "about:srcdoc"),
        "the view's console message is collected: {result:#}"
    );
    assert!(
        console.iter().any(|m| m["text"]
            .as_str()
            .is_some_and(|t| t.contains("ERR_NAME_NOT_RESOLVED"))),
        "the browser never leaves loopback: {result:#}"
    );
}

#[test]
fn a_step_that_fails_is_an_error_naming_it_with_what_the_frames_showed() {
    if !rho_tests::can_drive_browser() {
        return;
    }
    let port = serve(|path| (path == "/").then(|| "<p>only this</p>".to_owned()));
    let steps = json!([
        {"op": "goto", "url": format!("http://127.0.0.1:{port}/")},
        {"op": "waitText", "text": "never shown", "timeoutMs": 300},
        {"op": "readText"},
    ]);
    let failure = rho_tests::drive_browser(&steps).expect_err("the wait times out");
    assert!(
        failure.contains("step 1")
            && failure.contains("never shown")
            && failure.contains("only this"),
        "{failure}"
    );
    let output: serde_json::Value = failure
        .split_once("\noutput: ")
        .and_then(|(_, output)| serde_json::from_str(output).ok())
        .unwrap_or_else(|| panic!("the driver's output follows its message: {failure}"));
    assert_eq!(
        output["steps"].as_array().map(Vec::len),
        Some(2),
        "no step runs after a failure: {failure}"
    );
    assert_eq!(output["steps"][1]["ok"], false, "{failure}");
}
