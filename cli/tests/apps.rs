//! MCP Apps views through `rho mcp call --app` and the shell's `/app`,
//! rendered in a real browser (Debian's headless chromium, driven by
//! `tests/browser/drive.mjs`), against the ext-apps example servers from
//! npm (`@modelcontextprotocol/server-pdf`, `server-system-monitor`,
//! `server-basic-vanillajs`, pinned in tests/servers), on both executors.
//!
//! rho's browser opener here is `BROWSER`, a script that writes the URL it
//! was given to a file; the test opens that URL in chromium and checks
//! what the view shows, clicks its buttons (each a `tools/call` through
//! rho, whose answer must appear in the view), tries what a hostile view
//! or page would (read the host page from the view, call another server's
//! tool, post without the token or from another origin, name another
//! Host), then stops rho with SIGINT and sees the page say the view ended.
//! A link the view asks to open is opened only on a yes at the terminal
//! (`rho_tests::pty`), shown with its host apart; without a terminal it is
//! shown and not opened.
//! Where no browser can open (CI without `BROWSER`), the text result and a
//! line saying how to open the view, exit 0.

#![cfg(unix)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::Scene;
use rho_tests::{can_drive_browser, drive_browser, node_modules, node_server, pdf_js};
use serde_json::{Value, json};

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

fn system_monitor_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-system-monitor/dist/index.js")
}

fn basic_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-basic-vanillajs/dist/index.js")
}

/// A copy of the PDF fixture `name` (server-pdf writes to its files, so it
/// gets a copy of its own in a scratch directory); its path.
fn pdf_copy(name: &str) -> String {
    let pdf = rho_tests::scratch_dir("apps-pdf").join(name);
    std::fs::copy(
        rho_tests::tests_dir().join("servers/fixtures").join(name),
        &pdf,
    )
    .expect("copy the PDF");
    pdf.display().to_string()
}

/// A scene with `config` whose `BROWSER` writes its URL to `url.txt`.
fn scene(name: &str, runtime: Runtime, config: &str) -> Scene {
    let scene = Scene::new(RHO, &format!("apps-{name}"), runtime).with_config(config);
    let opener = scene.write(
        "browser.sh",
        "#!/bin/sh\nprintf '%s' \"$1\" > \"$(dirname \"$0\")/url.txt\"\n",
    );
    let mut permissions = std::fs::metadata(&opener).expect("opener").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&opener, permissions).expect("make the opener runnable");
    scene
}

/// A rho serving a view: the child, and where its output goes.
struct Serving {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Serving {
    /// Waits for rho to end; its exit code, stdout and stderr.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break self.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        (status.code(), read("out.txt"), read("err.txt"))
    }
}

/// Starts rho with `args` (after `--config`), stdout and stderr to files,
/// `stdin` written to a pipe that is then closed; returns once the browser
/// opener was given the view's URL.
fn serve(scene: &Scene, args: &[&str], stdin: &[u8]) -> Serving {
    let dir = scene.dir().to_path_buf();
    let _ = std::fs::remove_file(dir.join("url.txt"));
    let file = |name: &str| std::fs::File::create(dir.join(name)).expect("output file");
    let mut child = scene
        .command()
        .args(args)
        .env("BROWSER", dir.join("browser.sh"))
        .stdin(Stdio::piped())
        .stdout(file("out.txt"))
        .stderr(file("err.txt"))
        .spawn()
        .expect("start rho");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = loop {
        if let Ok(url) = std::fs::read_to_string(dir.join("url.txt"))
            && !url.is_empty()
        {
            break url;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!(
                "rho ended ({status}) before opening a view:\n{}",
                std::fs::read_to_string(dir.join("err.txt")).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "no view URL within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    Serving { child, url, dir }
}

/// Runs the browser steps; panics with the driver's story when one fails.
fn drive(steps: Vec<Value>) -> Value {
    drive_browser(&json!({"steps": steps, "timeoutMs": 20_000}))
        .unwrap_or_else(|story| panic!("{story}"))
}

/// The step that waits until rho has said `text` on stderr (what the view
/// asked has reached it).
fn said(serving: &Serving, text: &str) -> Value {
    json!({"op": "waitFile", "path": serving.dir.join("err.txt"), "contains": text})
}

/// The steps that stop rho and see the page say so.
fn stop_and_see_it_end(pid: u32) -> Vec<Value> {
    vec![
        json!({"op": "signal", "pid": pid}),
        json!({"op": "waitText", "text": "This view has ended", "frame": "/app/"}),
        json!({"op": "waitFrameGone", "frame": "/view/"}),
    ]
}

/// Where a test's screenshot goes (`target/apps-<name>.png`): the docs'
/// pictures are copied from there.
fn screenshot(name: &str) -> String {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target
        .join(format!("apps-{name}.png"))
        .display()
        .to_string()
}

both_executors!(system_monitor_view_renders_and_its_button_polls_through_rho);

fn system_monitor_view_renders_and_its_button_polls_through_rho(rt: Runtime) {
    if !can_drive_browser() {
        return;
    }
    let scene = scene(
        "monitor",
        rt,
        &node_server("monitor", &system_monitor_js(), &["--stdio"]),
    );
    let serving = serve(
        &scene,
        &["mcp", "call", "--app", "monitor", "get-system-info"],
        b"",
    );
    let csp = view_csp(&url::Url::parse(&serving.url).expect("the view's URL"));
    let mut steps = vec![
        json!({"op": "goto", "url": serving.url}),
        // The tool's result reached the view...
        json!({"op": "waitText", "text": "linux", "frame": "/view/"}),
        // ...and its poll (an app-only tool) went through rho and back.
        json!({"op": "waitText", "text": "GB / ", "frame": "/view/"}),
        json!({"op": "screenshot", "path": screenshot(&format!("system-monitor-{}", rt.name()))}),
        // Its button stops the polling, and starts it again: a call
        // through rho, whose answer replaces the status.
        json!({"op": "click", "selector": "#poll-toggle-btn", "frame": "/view/"}),
        json!({"op": "waitText", "text": "Stopped", "frame": "/view/"}),
        json!({"op": "click", "selector": "#poll-toggle-btn", "frame": "/view/"}),
        json!({"op": "waitTextGone", "text": "Stopped", "frame": "/view/"}),
        json!({"op": "waitTextGone", "text": "Starting", "frame": "/view/"}),
        json!({"op": "readText", "frame": "/view/"}),
    ];
    steps.extend(stop_and_see_it_end(serving.child.id()));
    let driven = drive(steps);
    let status = driven["steps"][9]["frames"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!status.contains("Error"), "{status}");
    let (code, out, err) = serving.finish();
    // A view that declares no domain: the restrictive default.
    eprintln!("the system monitor view's CSP: {csp}");
    assert!(csp.contains("connect-src 'none';"), "{csp}");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\"hostname\""), "the text result: {out}");
    assert!(
        err.contains("the view called `poll-system-stats`: answered"),
        "{err}"
    );
    assert!(
        err.contains("the view ended: the person closed it"),
        "{err}"
    );
}

both_executors!(pdf_view_renders_and_a_hostile_view_or_page_gets_nothing);

fn pdf_view_renders_and_a_hostile_view_or_page_gets_nothing(rt: Runtime) {
    if !can_drive_browser() {
        return;
    }
    let pdf = pdf_copy("two-pages.pdf");
    let config = format!(
        "{}{}",
        node_server("pdf", &pdf_js(), &["--stdio", &pdf]),
        node_server("basic", &basic_js(), &["--stdio"]),
    );
    let scene = scene("pdf", rt, &config);
    // An app-only tool is refused from the model's side.
    let refused = scene.rho(&[
        "mcp",
        "call",
        "pdf",
        "read_pdf_bytes",
        &format!("url={pdf}"),
    ]);
    assert_ne!(refused.code, Some(0), "{refused}");
    assert!(
        refused
            .all()
            .contains("only the server's MCP App view may call it"),
        "{refused}"
    );
    let url_arg = format!("url={pdf}");
    let serving = serve(
        &scene,
        &["mcp", "call", "--app", "pdf", "display_pdf", &url_arg],
        b"",
    );
    let page = url::Url::parse(&serving.url).expect("the view's URL");
    // The view's own messages, posted as a hostile view would: a tool of
    // another server, and a tool of its own.
    let post = |id: &str, tool: &str| {
        format!(
            "new Promise((resolve) => {{ \
               addEventListener('message', (e) => {{ if (e.data && e.data.id === '{id}') resolve(JSON.stringify(e.data)); }}); \
               parent.postMessage({{jsonrpc: '2.0', id: '{id}', method: 'tools/call', params: {{name: '{tool}', arguments: {{}}}}}}, '*'); \
               setTimeout(() => resolve('no answer'), 15000); }})"
        )
    };
    let mut steps = vec![
        json!({"op": "goto", "url": serving.url}),
        json!({"op": "waitText", "text": "Hello from rho", "frame": "/view/"}),
        json!({"op": "waitText", "text": "of 2", "frame": "/view/"}),
        json!({"op": "screenshot", "path": screenshot(&format!("pdf-{}", rt.name()))}),
        // Its next-page button: the view shows page 2 and tells rho, as
        // its context for the model.
        json!({"op": "click", "selector": "#next-btn", "frame": "/view/"}),
        json!({"op": "waitText", "text": "Page two, through rho", "frame": "/view/"}),
        said(&serving, "Current Page: 2/2"),
        // A second origin: the view cannot read the host page.
        json!({"op": "evaluate", "frame": "/view/", "expression": "parent.parent.document.body.innerText"}),
        json!({"op": "evaluate", "frame": "/view/", "expression": post("rho-test-other", "get-time")}),
        json!({"op": "evaluate", "frame": "/view/", "expression": post("rho-test-own", "list_pdfs")}),
    ];
    steps.extend(stop_and_see_it_end(serving.child.id()));
    // While the browser runs, the page's server is tried the way another
    // page or a rebinding name would.
    let forged = std::thread::spawn({
        let page = page.clone();
        move || forged_requests(&page)
    });
    let driven = drive(steps);
    let cross = &driven["steps"][7];
    assert!(
        cross["error"]
            .as_str()
            .unwrap_or_default()
            .contains("SecurityError"),
        "the view read the host page: {cross}"
    );
    let other = driven["steps"][8]["value"].as_str().unwrap_or_default();
    assert!(
        other.contains("\"error\"") && other.contains("server `pdf` has no tool `get-time`")
            || other.contains("no tool `get-time`"),
        "another server's tool: {other}"
    );
    let own = driven["steps"][9]["value"].as_str().unwrap_or_default();
    assert!(
        own.contains("\"result\"") && own.contains("two-pages.pdf"),
        "its own tool: {own}"
    );
    forged.join().expect("the forged requests");
    let (code, _out, err) = serving.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("the view called `read_pdf_bytes`: answered"),
        "{err}"
    );
    assert!(err.contains("Current Page: 2/2"), "{err}");
}

/// Requests to the view's pages that rho must refuse: the wrong token, a
/// post from another origin, another `Host` (DNS rebinding), one origin's
/// token on the other origin; and the view's CSP as served.
fn forged_requests(page: &url::Url) {
    let port = page.port().expect("a port");
    let token = page.path().trim_start_matches("/app/").to_owned();
    let host = format!("127.0.0.1:{port}");
    let get = |path: &str, host: &str| {
        request(
            port,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        )
    };
    let post = |path: &str, origin: &str| {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        request(
            port,
            &format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    let status = |answer: &str| answer.split_whitespace().nth(1).unwrap_or("").to_owned();
    let own_origin = format!("http://{host}");
    assert_eq!(status(&post("/rpc/not-the-token", &own_origin)), "404");
    assert_eq!(
        status(&post(&format!("/rpc/{token}"), "http://evil.example")),
        "403"
    );
    assert_eq!(
        status(&get(
            &format!("/app/{token}"),
            &format!("evil.example:{port}")
        )),
        "403"
    );
    let host_page = get(&format!("/app/{token}"), &host);
    assert_eq!(status(&host_page), "200", "{host_page}");
    assert!(host_page.contains("frame-ancestors 'none'"), "{host_page}");
    // The sandbox's origin: its own token, its pages, and the view's CSP.
    let sandbox = host_page
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|src| url::Url::parse(src).ok())
        .expect("the sandbox frame's URL");
    let sandbox_port = sandbox.port().expect("port");
    assert_ne!(sandbox_port, port, "the sandbox is another origin");
    let sandbox_token = sandbox.path().trim_start_matches("/sandbox/").to_owned();
    assert_ne!(sandbox_token, token, "each origin has its own secret");
    assert_eq!(status(&get(&format!("/app/{sandbox_token}"), &host)), "404");
    let csp = view_csp(page);
    eprintln!("the PDF view's CSP: {csp}");
    assert!(
        csp.contains("connect-src 'self' https://unpkg.com;"),
        "{csp}"
    );
    let sandbox_host = format!("127.0.0.1:{sandbox_port}");
    assert!(
        csp.ends_with(&format!(
            "frame-ancestors http://{sandbox_host} http://{host}"
        )),
        "{csp}"
    );
}

/// The `Content-Security-Policy` the view of the host page at `page` is
/// served under (the view's URL read from the sandbox's page).
fn view_csp(page: &url::Url) -> String {
    let port = page.port().expect("a port");
    let host_page = request(
        port,
        &format!(
            "GET {} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
            page.path()
        ),
    );
    let sandbox = host_page
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|src| url::Url::parse(src).ok())
        .expect("the sandbox frame's URL");
    let sandbox_port = sandbox.port().expect("port");
    let token = sandbox.path().trim_start_matches("/sandbox/");
    let view = request(
        sandbox_port,
        &format!("GET /view/{token} HTTP/1.1\r\nHost: 127.0.0.1:{sandbox_port}\r\n\r\n"),
    );
    view.lines()
        .find_map(|l| l.strip_prefix("Content-Security-Policy: "))
        .expect("the view's CSP")
        .to_owned()
}

/// One HTTP/1.1 exchange on loopback; the whole answer (head and body).
fn request(port: u16, text: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(text.as_bytes()).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

both_executors!(basic_view_buttons_call_message_and_ask_for_a_link);

fn basic_view_buttons_call_message_and_ask_for_a_link(rt: Runtime) {
    if !can_drive_browser() {
        return;
    }
    let scene = scene(
        "basic",
        rt,
        &node_server("basic", &basic_js(), &["--stdio"]),
    );
    let serving = serve(&scene, &["mcp", "call", "--app", "basic", "get-time"], b"");
    let mut steps = vec![
        json!({"op": "goto", "url": serving.url}),
        json!({"op": "waitText", "text": "Server Time:", "frame": "/view/"}),
        json!({"op": "waitTextGone", "text": "Loading...", "frame": "/view/"}),
        json!({"op": "click", "text": "Get Server Time", "frame": "/view/"}),
        said(&serving, "the view called `get-time`: answered"),
        json!({"op": "click", "text": "Send Message", "frame": "/view/"}),
        said(
            &serving,
            "the view says (a user turn): This is message text.",
        ),
        json!({"op": "click", "text": "Open Link", "frame": "/view/"}),
        said(
            &serving,
            "the view asked to open https://modelcontextprotocol.io/; not opened",
        ),
    ];
    steps.extend(stop_and_see_it_end(serving.child.id()));
    let driven = drive(steps);
    let (code, _out, err) = serving.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("the view called `get-time`: answered"),
        "{err}"
    );
    assert!(
        err.contains("the view says (a user turn): This is message text."),
        "{err}\n{driven}"
    );
    // No terminal to ask: the link is shown, not opened.
    assert!(
        err.contains("the view asked to open https://modelcontextprotocol.io/; not opened"),
        "{err}"
    );
}

both_executors!(without_a_browser_the_text_result_and_how_to_open_the_view);

fn without_a_browser_the_text_result_and_how_to_open_the_view(rt: Runtime) {
    let scene = Scene::new(RHO, "apps-headless", rt).with_config(&node_server(
        "monitor",
        &system_monitor_js(),
        &["--stdio"],
    ));
    let run = scene.rho_env(
        &["mcp", "call", "--app", "monitor", "get-system-info"],
        &[("CI", "true"), ("BROWSER", "")],
    );
    run.expect_code(0);
    assert!(run.stdout.contains("\"hostname\""), "{run}");
    assert!(
        run.stderr.contains(
            "has an MCP App view (ui://system-monitor/mcp-app.html), not opened: CI has no browser. To open it, run this where a browser can open (or with BROWSER naming one): rho mcp call --app monitor get-system-info"
        ),
        "{run}"
    );
    let json = scene.rho_env(
        &[
            "mcp",
            "call",
            "--app",
            "--json",
            "monitor",
            "get-system-info",
        ],
        &[("BROWSER", "/bin/true")],
    );
    json.expect_code(0);
    assert!(
        json.stderr.contains("--json prints the result only"),
        "{json}"
    );
}

both_executors!(the_shell_opens_a_view_with_app_and_sigint_closes_it);

fn the_shell_opens_a_view_with_app_and_sigint_closes_it(rt: Runtime) {
    if !can_drive_browser() {
        return;
    }
    // The PDF view on one executor, the system monitor's on the other.
    let (config, line, shows) = match rt {
        Runtime::Smol => {
            let pdf = pdf_copy("hello.pdf");
            (
                node_server("pdf", &pdf_js(), &["--stdio", &pdf]),
                format!("/app pdf:display_pdf url={pdf}\n"),
                "Hello from rho",
            )
        }
        Runtime::Blocking => (
            node_server("monitor", &system_monitor_js(), &["--stdio"]),
            "/app monitor:get-system-info\n".to_owned(),
            "GB / ",
        ),
    };
    let scene = scene("shell", rt, &config);
    let serving = serve(
        &scene,
        &["--runtime", rt.name(), "mcp", "shell"],
        line.as_bytes(),
    );
    let mut steps = vec![
        json!({"op": "goto", "url": serving.url}),
        json!({"op": "waitText", "text": shows, "frame": "/view/"}),
    ];
    steps.extend(stop_and_see_it_end(serving.child.id()));
    drive(steps);
    let (code, out, err) = serving.finish();
    // A shell reading a pipe stops on SIGINT (as for any command), after
    // the view is closed.
    assert_eq!(code, Some(130), "{out}{err}");
    assert!(out.contains("the view is open; Ctrl-C closes it"), "{out}");
    assert!(out.contains("the view ended"), "{out}");
}

both_executors!(a_link_the_view_asks_for_opens_on_a_yes_at_the_terminal);

fn a_link_the_view_asks_for_opens_on_a_yes_at_the_terminal(rt: Runtime) {
    if !can_drive_browser() {
        return;
    }
    let scene = scene("link", rt, &node_server("basic", &basic_js(), &["--stdio"]));
    let url_file = scene.dir().join("url.txt");
    let _ = std::fs::remove_file(&url_file);
    let mut command = scene.command();
    command
        .args(["mcp", "call", "--app", "basic", "get-time"])
        .env("BROWSER", scene.dir().join("browser.sh"));
    // rho on a terminal, answering yes to the link; it ends once the page
    // is closed (the browser's run is over).
    let terminal = std::thread::spawn(move || {
        rho_tests::pty::run_on_terminal(command, &[("open it? [y/N] ", "y\n")], 200)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let view = loop {
        if let Ok(url) = std::fs::read_to_string(&url_file)
            && !url.is_empty()
        {
            break url;
        }
        assert!(Instant::now() < deadline, "no view URL within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    let link = "https://modelcontextprotocol.io/";
    // The browser stays until the opener was given the link (after the
    // yes): closed sooner, it could take the view's request with it.
    drive(vec![
        json!({"op": "goto", "url": view}),
        json!({"op": "waitText", "text": "Server Time:", "frame": "/view/"}),
        json!({"op": "click", "text": "Open Link", "frame": "/view/"}),
        json!({"op": "waitFile", "path": url_file, "contains": link, "timeoutMs": 30_000}),
    ]);
    let (code, shown) = terminal.join().expect("the terminal");
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("the view asks to open a link:"), "{shown}");
    assert!(shown.contains("host: modelcontextprotocol.io"), "{shown}");
    assert!(
        shown.contains("the view ended: the page was closed"),
        "{shown}"
    );
}
