//! Headless Chromium driven over W3C WebDriver by Debian's `chromedriver`
//! (installed by `.ci/setup`), with a virtual authenticator from the
//! WebDriver extension of WebAuthn Level 2: a real browser engine runs the
//! portal's pages and script and answers its passkey ceremonies.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use svc_client::transport::Transport;

/// The element reference member of a WebDriver answer.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    port: u16,
    transport: Transport,
    session: String,
    _profile: tempfile::TempDir,
    /// Where screenshots go: kept as test artefacts.
    pub shots: std::path::PathBuf,
}

impl Drop for Browser {
    /// Ends the session (chromedriver then closes Chromium), then stops the
    /// driver: a failed test leaves no browser behind.
    fn drop(&mut self) {
        use std::io::{Read, Write};
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.session
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let _ = stream.read(&mut [0u8; 512]);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A desk's width, in CSS pixels: the screenshots' and the tests' own.
const WIDE: u32 = 1280;

/// axe-core's script, from where `.ci/setup` installs it (`SVC_AXE_DIR`,
/// else `~/.cache/svc-axe`).
fn axe_source() -> &'static str {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SOURCE.get_or_init(|| {
        let dir = std::env::var("SVC_AXE_DIR")
            .unwrap_or_else(|_| format!("{}/.cache/svc-axe", std::env::var("HOME").unwrap_or_default()));
        let path = std::path::Path::new(&dir).join("node_modules/axe-core/axe.min.js");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("axe-core at {} ({e}): run .ci/setup", path.display()))
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session with a virtual
    /// platform authenticator that verifies its user.
    pub async fn start(shots: &str) -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (apt install chromium-driver; .ci/setup does)");
        let transport = Transport::new(&format!("http://127.0.0.1:{port}")).unwrap();
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", format!("--window-size={WIDE},1300"),
                    format!("--user-data-dir={}", profile.path().display())],
            },
        }}});
        let mut session = None;
        for _ in 0..100 {
            if let Ok(answer) = transport.send(post("/session", &capabilities)).await {
                assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
                session = Some(answer.json()["value"]["sessionId"].as_str().unwrap().to_owned());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(shots);
        std::fs::create_dir_all(&shots).unwrap();
        let browser = Browser {
            driver,
            port,
            transport,
            session: session.expect("chromedriver answers"),
            _profile: profile,
            shots,
        };
        browser
            .command(
                "POST",
                "webauthn/authenticator",
                json!({"protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
                "hasUserVerification": true, "isUserConsenting": true, "isUserVerified": true}),
            )
            .await;
        browser
    }

    /// One WebDriver command of this session; answers its `value`.
    pub async fn command(&self, method: &str, path: &str, body: Value) -> Value {
        let uri = format!("/session/{}/{path}", self.session);
        let request = if method == "GET" { Request::get(uri).body(Body::empty()).unwrap() } else { post(&uri, &body) };
        let answer = self.transport.send(request).await.unwrap();
        assert_eq!(answer.status, 200, "{method} {path}: {}", String::from_utf8_lossy(&answer.bytes));
        answer.json()["value"].clone()
    }

    pub async fn open(&self, url: &str) {
        self.command("POST", "url", json!({"url": url})).await;
    }

    pub async fn url(&self) -> String {
        self.command("GET", "url", Value::Null).await.as_str().unwrap().to_owned()
    }

    pub async fn source(&self) -> String {
        self.command("GET", "source", Value::Null).await.as_str().unwrap().to_owned()
    }

    async fn element(&self, css: &str) -> String {
        let found = self.command("POST", "element", json!({"using": "css selector", "value": css})).await;
        found[ELEMENT].as_str().unwrap().to_owned()
    }

    /// Types `text` into the field `css` names, after clearing it.
    pub async fn fill(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.command("POST", &format!("element/{id}/clear"), json!({})).await;
        self.command("POST", &format!("element/{id}/value"), json!({"text": text})).await;
    }

    /// Presses Enter in the field `css` names, as a person submitting a
    /// form from the keyboard.
    pub async fn press_enter(&self, css: &str) {
        let id = self.element(css).await;
        self.command("POST", &format!("element/{id}/value"), json!({"text": "\u{E007}"})).await;
    }

    /// Walks the page with the Tab key alone, from its top, and fails
    /// unless every control a person can see (links, buttons, inputs,
    /// pickers, folds) takes the focus in turn: the page works from the
    /// keyboard. Answers how many controls it reached.
    pub async fn tab_walk(&self, name: &str) -> usize {
        let controls = "[...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, \
            summary, [tabindex]')].filter((e) => e.tabIndex >= 0 && !e.disabled && e.checkVisibility())";
        let marked = self
            .script(
                &format!(
                    "const all = {controls}; all.forEach((e, i) => e.dataset.walk = i);
                     document.activeElement?.blur(); window.scrollTo(0, 0); return all.length;"
                ),
                json!([]),
            )
            .await;
        let count = marked.as_u64().unwrap() as usize;
        let tab = json!({"actions": [{"type": "key", "id": "keyboard",
            "actions": [{"type": "keyDown", "value": "\u{E004}"}, {"type": "keyUp", "value": "\u{E004}"}]}]});
        let mut reached = std::collections::BTreeSet::new();
        // A date and time input takes a Tab per part: room for those.
        for _ in 0..3 * count + 8 {
            self.command("POST", "actions", tab.clone()).await;
            let at = self.script("return document.activeElement?.dataset.walk ?? null", json!([])).await;
            if let Some(i) = at.as_str().and_then(|i| i.parse::<usize>().ok()) {
                reached.insert(i);
            }
            if reached.len() == count {
                break;
            }
        }
        let missed = self
            .script(
                &format!("return {controls}.filter((e) => !arguments[0].includes(Number(e.dataset.walk))).map((e) => e.outerHTML.slice(0, 120))"),
                json!([reached.iter().collect::<Vec<_>>()]),
            )
            .await;
        assert_eq!(missed, json!([]), "{name}: controls the Tab key never reached");
        count
    }

    pub async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.command("POST", &format!("element/{id}/click"), json!({})).await;
    }

    /// Runs a script in the page; answers what it returns.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.command("POST", "execute/sync", json!({"script": script, "args": args})).await
    }

    /// POSTs `body` (JSON text) from the page, as its script would, with
    /// the page's cookies; answers (status, JSON reply).
    pub async fn post_from_page(&self, url: &str, body: &str, csrf: &str) -> (u64, Value) {
        let script = "const [url, body, csrf, done] = arguments;
            fetch(url, {method: 'POST', headers: {'content-type': 'application/json', 'x-csrf-token': csrf},
                body, credentials: 'same-origin'})
              .then((r) => r.json().then((j) => done({status: r.status, body: j})));";
        let answer = self.command("POST", "execute/async", json!({"script": script, "args": [url, body, csrf]})).await;
        (answer["status"].as_u64().unwrap(), answer["body"].clone())
    }

    /// Waits until the page's address ends with `suffix`, or its text holds
    /// `text` when the suffix is empty.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&str, &str) -> bool) {
        let (mut url, mut source) = (String::new(), String::new());
        for _ in 0..200 {
            url = self.url().await;
            source = self.source().await;
            if done(&url, &source) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{what} never happened; at {url}:\n{source}");
    }

    /// Saves the page as `<name>.png` at a desk's 1280 px wide and
    /// `<name>-390.png` at a phone's 390, among the artefacts, and checks
    /// it: nothing wider than a 360 px screen, no serious or critical
    /// axe-core violation, every control reached by the Tab key.
    pub async fn shot(&self, name: &str) -> std::path::PathBuf {
        self.resize(390).await;
        self.save(&format!("{name}-390")).await;
        // The narrowest phone the portal is made for: nothing wider than
        // the screen (a table scrolls inside its own box).
        self.resize(360).await;
        let overflow = self
            .script(
                "return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > \
                 document.documentElement.clientWidth + 1 && !e.closest('.scroll, pre, table')).slice(0, 5)\
                 .map((e) => e.outerHTML.slice(0, 100))",
                json!([]),
            )
            .await;
        assert_eq!(overflow, json!([]), "{name}: wider than a 360 px screen");
        self.resize(WIDE).await;
        let path = self.save(name).await;
        self.audit(name).await;
        self.tab_walk(name).await;
        path
    }

    async fn resize(&self, width: u32) {
        self.command("POST", "window/rect", json!({"width": width, "height": 1300})).await;
    }

    async fn save(&self, name: &str) -> std::path::PathBuf {
        let png = self.command("GET", "screenshot", Value::Null).await;
        let bytes = svc_core::b64::std_decode(png.as_str().unwrap()).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Runs axe-core (installed by `.ci/setup`) on the page and fails on a
    /// serious or critical violation, naming the rule and the elements.
    pub async fn audit(&self, name: &str) {
        let axe = axe_source();
        let script = format!(
            "{axe}\nreturn axe.run(document, {{resultTypes: ['violations']}}).then((r) => r.violations
               .filter((v) => v.impact === 'serious' || v.impact === 'critical')
               .map((v) => ({{rule: v.id, impact: v.impact, help: v.help, at: v.nodes.slice(0, 5).map((n) => n.target.join(' '))}})));"
        );
        let violations = self.script(&script, json!([])).await;
        assert_eq!(violations, json!([]), "axe-core on {name} at {}", self.url().await);
    }
    /// The browser's cookies for the page's site (HttpOnly ones included).
    pub async fn cookie(&self, name: &str) -> Option<Value> {
        let all = self.command("GET", "cookie", Value::Null).await;
        all.as_array().unwrap().iter().find(|c| c["name"] == name).cloned()
    }
}

fn post(uri: &str, body: &Value) -> Request<Body> {
    Request::post(uri)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}
