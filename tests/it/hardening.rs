//! Issue 23's findings, each as the attack or fault it answers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svc_client::transport::Transport;
use svc_core::keys::{Alg, SigningKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{AUTHORITY, Clock, Home, product, products_scope};
use crate::retrieval::lamp_search;

// A registration checked before it is written lets two at once both pass
// the check; the one writer checks again as it writes. (Whether the four
// interleave depends on scheduling; the writer's check itself is proven by
// `replication::tests::a_change_that_requires_a_key_absent_…`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_registrations_of_one_key_give_one_201() {
    let home = Home::start().await;
    let created = home
        .admin("POST", "/admin/businesses", json!({"legal_name": "Lumio", "country": "FR", "brands": ["Lumio"]}))
        .await;
    let uuid = created.body["business_uuid"].as_str().unwrap().to_owned();
    let key = SigningKey::from_seed(Alg::Ed25519, &[7; 32]).unwrap();
    let body = json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"});
    let path = format!("/admin/businesses/{uuid}/keys");
    let register = || home.admin("POST", &path, body.clone());
    let (a, b, c, d) = tokio::join!(register(), register(), register(), register());
    let answers = [a, b, c, d];
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    for refused in answers.iter().filter(|a| a.status != 201) {
        assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{}", refused.body);
    }
    home.state.stop_actors().await;
}

// A retrieval key registered again never moves to another company.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrieval_key_registered_again_stays_with_its_company() {
    let home = Home::start().await;
    let key = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
    let company = json!({"name": "Acme AI", "verified": true, "terms_accepted": 1});
    let (acme, _) = home.caller_with(company, key.clone()).await;
    let rival = json!({"name": "Rival AI", "verified": true, "terms_accepted": 1});
    let made = home.admin("POST", "/admin/companies", rival).await;
    let rival_uuid = made.body["ai_company_uuid"].as_str().unwrap().to_owned();
    let group = home.admin("POST", &format!("/admin/companies/{rival_uuid}/groups"), json!({"name": "bots"})).await;
    let group_id = group.body["ai_group_id"].as_str().unwrap();
    let again = home
        .admin(
            "POST",
            &format!("/admin/groups/{group_id}/retrieval-keys"),
            json!({"jwk": key.verifying_key().to_jwk()}),
        )
        .await;
    assert_eq!((again.status, again.body["code"].as_str()), (400, Some("request_invalid")), "{}", again.body);
    let stored = home.state.registry.retrieval_key(&acme.key_id).unwrap().unwrap();
    assert_eq!(stored.company_uuid, acme.company_uuid);
    home.state.stop_actors().await;
}

// A retrieval key can be ended: its signatures are refused from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_retrieval_key_is_refused_from_then_on() {
    let home = Home::start().await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    let revoked = home.admin("POST", &format!("/admin/retrieval-keys/{}/revoke", caller.key_id), Value::Null).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let refused = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (401, Some("key_unknown")), "{}", refused.body);
    // Revoked again: the first revocation stands.
    let again = home.admin("POST", &format!("/admin/retrieval-keys/{}/revoke", caller.key_id), Value::Null).await;
    assert_eq!(again.body["revoked_at"], revoked.body["revoked_at"]);
    let unknown = home.admin("POST", "/admin/retrieval-keys/nope/revoke", Value::Null).await;
    assert_eq!(unknown.status, 404);
    home.state.stop_actors().await;
}

/// Reads until the server closes the socket: true if it did within `within`.
async fn closed_within(socket: &mut TcpStream, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, socket.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// The status of the first answer on `socket`, read within `within`.
pub(crate) async fn status_within(socket: &mut TcpStream, within: Duration) -> Option<u16> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let line = String::from_utf8_lossy(&head).lines().next()?.to_owned();
        line.split(' ').nth(1)?.parse().ok()
    };
    tokio::time::timeout(within, read).await.ok().flatten()
}

/// A request's head as HTTP/1.1 bytes, with `Content-Length: declared`.
pub(crate) fn head_bytes(request: &axum::http::Request<axum::body::Body>, declared: usize) -> Vec<u8> {
    let mut head = format!("{} {} HTTP/1.1\r\n", request.method(), request.uri());
    if !request.headers().contains_key("host") {
        head.push_str(&format!("host: {AUTHORITY}\r\n"));
    }
    for (name, value) in request.headers() {
        head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    head.push_str(&format!("content-type: application/json\r\ncontent-length: {declared}\r\n\r\n"));
    head.into_bytes()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The test process's peak resident memory, in MiB (for the record: tests
/// share the process, so run one alone to read it).
pub(crate) fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("VmHWM: 0 kB");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).unwrap_or(0) / 1024
}

/// `n` honest calls one after another: their median and slowest times.
pub(crate) async fn honest_times<F, Fut>(n: usize, mut call: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = u16>,
{
    let mut times = Vec::new();
    for _ in 0..n {
        let started = Instant::now();
        assert_eq!(call().await, 200, "an honest call is answered during the attack");
        times.push(started.elapsed());
    }
    let slowest = *times.iter().max().unwrap();
    (median(&mut times), slowest)
}

// Slowloris: sockets that dribble an HTTP/1 head or an HTTP/2 preface and
// frame a byte at a time, or say nothing at all, more of them than the
// listener takes. Each is cut off (the first request's head deadline, the
// idle deadline); signed searches keep being answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_is_cut_off_while_honest_callers_are_answered() {
    let (home, node) = Home::listening(|c| {
        c.listener.header_read_timeout_ms = 1_000;
        c.listener.idle_timeout_ms = 2_000;
        c.listener.max_connections = 64;
    })
    .await;
    let caller = home.caller("Acme AI").await;
    let addr = node.addr;
    let mut attackers = Vec::new();
    for i in 0..100 {
        attackers.push(tokio::spawn(async move {
            let mut socket = TcpStream::connect(addr).await.unwrap();
            let opened = Instant::now();
            if i % 5 != 0 {
                // A fifth of them speak HTTP/2: the preface, an empty
                // SETTINGS frame, then a 16 KiB HEADERS frame that never ends.
                let (head, filler): (&[u8], u8) = if i % 5 == 1 {
                    (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0\0\x40\0\x01\x04\0\0\0\x01", 0)
                } else {
                    (b"GET /healthz HTTP/1.1\r\nHost: api.svc.localhost\r\nX-Slow: ", b'a')
                };
                for byte in head.iter().chain(std::iter::repeat(&filler)).take(300) {
                    if socket.write_all(&[*byte]).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            (closed_within(&mut socket, Duration::from_secs(20)).await, opened.elapsed())
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let transport = Transport::new(&format!("http://{addr}")).unwrap();
    let body = serde_json::to_vec(&lamp_search()).unwrap();
    let mut honest = Vec::new();
    for _ in 0..10 {
        let request = home.signed_request(&caller.key, "POST", "/v1/search", &body, "svc-retrieval", &[]);
        let started = Instant::now();
        let answer = tokio::time::timeout(Duration::from_secs(20), transport.send(request)).await;
        let answer = answer.expect("an honest search is answered during the attack").unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        honest.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut cut = Vec::new();
    for attacker in attackers {
        let (closed, after) = attacker.await.unwrap();
        assert!(closed, "every slow or silent socket is closed by the server");
        // Cut by a deadline (1 s head, 2 s idle, after a wait for a slot),
        // not by running out of bytes to dribble (30 s).
        assert!(after < Duration::from_secs(10), "cut only after {after:?}");
        cut.push(after);
    }
    eprintln!(
        "slowloris: honest search median {:?} max {:?}; attackers cut after median {:?} max {:?}; peak RSS {} MiB",
        median(&mut honest.clone()),
        honest.iter().max().unwrap(),
        median(&mut cut.clone()),
        cut.iter().max().unwrap(),
        peak_rss_mib()
    );
    node.stop().await;
}

// Held uploads: strangers declaring 30 MiB are answered from their head
// alone, before they send the body; signed ones hold a publishing slot only
// while their body keeps coming, and past the cap the next is told to wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_uploads_are_refused_by_their_head_or_their_slot() {
    let (home, node) = Home::listening(|c| {
        c.listener.in_flight.publish = 2;
        c.listener.body_read_timeout_ms = 1_000;
    })
    .await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let addr = node.addr;
    let strangers: Vec<_> = (0..20)
        .map(|_| {
            tokio::spawn(async move {
                let mut socket = TcpStream::connect(addr).await.unwrap();
                let head = format!(
                    "POST /v1/publish/products HTTP/1.1\r\nhost: {AUTHORITY}\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\n\r\n",
                    30 << 20
                );
                socket.write_all(head.as_bytes()).await.unwrap();
                socket.write_all(&[b' '; 1024]).await.unwrap();
                status_within(&mut socket, Duration::from_secs(10)).await
            })
        })
        .collect();
    for stranger in strangers {
        assert_eq!(stranger.await.unwrap(), Some(401), "answered from the head, body unsent");
    }

    // Two signed uploads whose bodies stall take both publishing slots.
    let big = vec![b' '; 1 << 20];
    let mut held = Vec::new();
    for n in 0..2 {
        let request = home.signed_request(
            &b.key,
            "POST",
            "/v1/publish/products",
            &big,
            "svc-push",
            &[("idempotency-key", &format!("held-{n}"))],
        );
        let mut socket = TcpStream::connect(addr).await.unwrap();
        socket.write_all(&head_bytes(&request, big.len())).await.unwrap();
        socket.write_all(&big[..100]).await.unwrap();
        held.push(socket);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let transport = Transport::new(&format!("http://{addr}")).unwrap();
    let caller = home.caller("Acme AI").await;
    let search = serde_json::to_vec(&lamp_search()).unwrap();
    let (median, slowest) = honest_times(10, || async {
        let request = home.signed_request(&caller.key, "POST", "/v1/search", &search, "svc-retrieval", &[]);
        transport.send(request).await.unwrap().status
    })
    .await;
    eprintln!("held uploads: honest search median {median:?} max {slowest:?}; peak RSS {} MiB", peak_rss_mib());
    let records = [product("Lumio", "SKU-1", "2.00")];
    let seq = b.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let seal = home.batch_seal(&b, &records, seq, 0, home.clock.now());
    let body = home.publish_body(&seal, &records);
    let publish =
        || home.signed_request(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "ok")]);
    let busy = transport.send(publish()).await.unwrap();
    assert_eq!(busy.status, 503, "{}", String::from_utf8_lossy(&busy.bytes));
    assert!(busy.headers.contains_key("retry-after"));
    // Their bodies stop coming: each is answered 400 and its slot is free.
    for mut socket in held {
        assert_eq!(status_within(&mut socket, Duration::from_secs(10)).await, Some(400));
    }
    let served = transport.send(publish()).await.unwrap();
    assert!((200..300).contains(&served.status), "{} {}", served.status, String::from_utf8_lossy(&served.bytes));
    node.stop().await;
}

// A mandate's allow-list sees the client a trusted proxy forwarded, never
// an address a caller wrote itself, and never the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mandates_allow_list_sees_the_client_behind_trusted_proxies_only() {
    let mut scope = products_scope(1000);
    scope["source_ip_allow_list"] = json!(["203.0.113.0/24"]);
    // In-process requests come from 127.0.0.1, here a trusted front door.
    let behind_door = Home::start_with_config(tempfile::tempdir().unwrap(), |c| {
        c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let direct = Home::start().await;
    let cases = [
        (&behind_door, "203.0.113.5", true),
        (&behind_door, "198.51.100.9", false),
        // The caller wrote the left entry; the door added the right one.
        (&behind_door, "203.0.113.5, 198.51.100.9", false),
        // Not from a trusted proxy: the header is the caller's own words.
        (&direct, "203.0.113.5", false),
    ];
    for (n, (home, forwarded_for, allowed)) in cases.into_iter().enumerate() {
        let brand = format!("Lumio{n}");
        let b = home.business(&brand, scope.clone()).await;
        let records = [product(&brand, "SKU-1", "2.00")];
        let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
        let body = home.publish_body(&seal, &records);
        let headers = [("idempotency-key", "a"), ("x-forwarded-for", forwarded_for)];
        let answer = home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &headers).await;
        if allowed {
            assert!((200..300).contains(&answer.status), "{forwarded_for}: {}", answer.body);
        } else {
            assert_eq!(answer.body["code"], "source_not_allowed", "{forwarded_for}: {}", answer.body);
        }
    }
    behind_door.state.stop_actors().await;
    direct.state.stop_actors().await;
}

// A flood of public verifications from one address (an IPv6 one by its
// /64) is slowed with 429 and Retry-After; another address, and the same
// one a second later, are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_verification_is_rate_limited_per_client_address() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.verify_per_second = 3).await;
    let verify = |from: &str| {
        let mut request = axum::http::Request::post("/v1/verify")
            .header("host", AUTHORITY)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(r#"{"record_base64":"e30="}"#))
            .unwrap();
        let peer: std::net::SocketAddr = format!("{from}:40000").parse().unwrap();
        request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
        home.send(request)
    };
    for _ in 0..3 {
        assert_ne!(verify("198.51.100.1").await.status, 429);
    }
    let slowed = verify("198.51.100.1").await;
    assert_eq!((slowed.status, slowed.body["code"].as_str()), (429, Some("rate_limited")), "{}", slowed.body);
    assert!(slowed.headers.contains_key("retry-after"));
    assert_ne!(verify("198.51.100.2").await.status, 429, "another address has its own rate");
    home.clock.advance(1_001);
    assert_ne!(verify("198.51.100.1").await.status, 429, "a second later");
    // An IPv6 caller stepping through its own /64 finds no fresh rate.
    for n in 1..=3 {
        assert_ne!(verify(&format!("[2001:db8:1:2::{n}]")).await.status, 429);
    }
    assert_eq!(verify("[2001:db8:1:2:ffff::9]").await.status, 429, "one /64, one rate");
    assert_ne!(verify("[2001:db8:1:3::1]").await.status, 429, "another /64 has its own");
    home.state.stop_actors().await;
}

/// A tmpfs of `size` mounted at a fresh folder, unmounted when dropped: a
/// disk the test can fill. Mounting needs root, as the project's CI has.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(status.success(), "mounting a tmpfs needs root (CI runs as root)");
        Tmpfs(dir)
    }

    /// Writes a file of `bytes` at most (until the disk is full without
    /// a limit); answers its path.
    fn fill(&self, name: &str, bytes: Option<usize>) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.0.path().join(name);
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        let mut written = 0;
        while bytes.is_none_or(|b| written < b) && file.write_all(&chunk).is_ok() {
            written += chunk.len();
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

// A full disk: every signed request that must write (its nonce) answers
// 503 with Retry-After, never 500 nor nonce_reused, and /readyz says why;
// once space returns the node serves again by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_503_and_unready_then_recovers_when_space_returns() {
    // RocksDB reserves its write-ahead log's next 70 MiB up front when it
    // can, and so writes on into a full disk; ballast leaves it too little
    // to reserve, as on a disk already nearly full. Recovering needs a
    // write buffer's worth (64 MiB) free again.
    let disk = Tmpfs::mount("160m");
    let ballast = disk.fill("ballast", Some(120 << 20));
    let data = disk.0.path().join("data");
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.data_dir = data).await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    let ready = || home.send(axum::http::Request::get("/readyz").body(axum::body::Body::empty()).unwrap());
    assert_eq!(ready().await.status, 200);

    let filler = disk.fill("filler", None);
    let mut statuses = Vec::new();
    for _ in 0..50 {
        let answer = home.search(&caller, "/v1/search", lamp_search()).await;
        statuses.push((answer.status, answer.body["code"].as_str().map(str::to_owned)));
        if answer.status == 503 {
            assert!(answer.headers.contains_key("retry-after"));
            break;
        }
    }
    let unready = ready().await;
    eprintln!("full disk: {statuses:?}; readyz {} {}; peak RSS {} MiB", unready.status, unready.body, peak_rss_mib());
    assert_eq!(statuses.last().unwrap().0, 503, "{statuses:?}");
    assert!(statuses.iter().all(|(s, _)| *s == 200 || *s == 503), "{statuses:?}");
    assert_eq!(unready.status, 503);
    assert!(unready.body["store_write_error"].is_string(), "{}", unready.body);

    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(ballast).unwrap();
    let mut recovered = false;
    for _ in 0..100 {
        if home.search(&caller, "/v1/search", lamp_search()).await.status == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(recovered, "serves again once space returns");
    assert_eq!(ready().await.status, 200);
    home.state.stop_actors().await;
}

// The operator's token is judged before an admin body is read: without it
// a malformed body is 401, not a parser's 400 (nothing is parsed for a
// stranger).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_bodies_are_read_only_after_the_token_is_judged() {
    use tower::ServiceExt;
    let home = Home::start().await;
    let post = |token: Option<&str>| {
        let mut request = axum::http::Request::post("/admin/businesses").header("content-type", "application/json");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(axum::body::Body::from("{not json")).unwrap();
        svc_http::api::admin_router(home.state.clone()).oneshot(request)
    };
    assert_eq!(post(None).await.unwrap().status(), 401);
    assert_eq!(post(Some("a-wrong-token-of-thirty-two-characters")).await.unwrap().status(), 401);
    assert_eq!(post(Some("operator-token-of-thirty-two-characters")).await.unwrap().status(), 400);
    home.state.stop_actors().await;
}

// The attack from outside: home on a small disk, a file filling it while a
// business publishes and callers search. While full, every answer is 200,
// 202 or 503 (never a dropped request), and the index cannot take what is
// published. Once the file is removed every write
// path heals by itself, the index included: its writer, which failed
// mid-commit, is made again from its directory, the publishes accepted
// meanwhile become searchable, and the node is ready, with no restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_heals_by_itself_on_every_write_path_the_index_included() {
    let disk = Tmpfs::mount("200m");
    let data = disk.0.path().join("data");
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.data_dir = data).await;
    let business = home.business("Lumen", products_scope(100_000)).await;
    assert_eq!(home.publish(&business, &[product("Lumen", "L-0", "9.00")], "p0").await.status, 200);
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    let ready = || home.send(axum::http::Request::get("/readyz").body(axum::body::Body::empty()).unwrap());

    // Full: publishes (a batch of a hundred lamps each) and searches go on.
    let filler = disk.fill("filler", None);
    let mut statuses = Vec::new();
    for round in 1..=30 {
        let lamps: Vec<Vec<u8>> = (0..100).map(|n| product("Lumen", &format!("L-{round}-{n}"), "9.00")).collect();
        statuses.push(home.publish(&business, &lamps, &format!("p{round}")).await.status);
        statuses.push(home.search(&caller, "/v1/search", lamp_search()).await.status);
    }
    // (RocksDB writes on into the log space it reserved; the index, which
    // writes new files, cannot.)
    assert!(statuses.iter().all(|s| [200, 202, 503].contains(s)), "{statuses:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let stuck = ready().await.body;
    eprintln!("full disk: {statuses:?}; readyz {stuck}");
    assert!(stuck["indexed_seq"].as_u64() < stuck["head_seq"].as_u64(), "the index is stuck while full: {stuck}");

    // Space returns: nothing is restarted.
    std::fs::remove_file(filler).unwrap();
    let head = || svc_node::replication::last_seq(&home.state.store).unwrap();
    crate::common::eventually("the index catches up with the log", async || {
        ready().await.body["indexed_seq"].as_u64() >= Some(head())
    })
    .await;
    crate::common::eventually("ready again", async || ready().await.status == 200).await;
    let healed = home.publish(&business, &[product("Lumen", "L-after", "9.00")], "after").await;
    assert_eq!(healed.status, 200, "{:?}", healed.body);
    let after = json!({"collection": "products", "q": "L-after", "filter": {"all": [{"country": "FR"}]},
        "sort_by": "_text_match:desc"});
    crate::common::eventually("the new product is searchable", async || {
        let found = home.search(&caller, "/v1/search", after.clone()).await;
        found.status == 200
            && found.body["rows"].as_array().is_some_and(|rows| {
                rows.iter().any(|r| r["product_name"].as_str().is_some_and(|n| n.contains("L-after")))
            })
    })
    .await;
    let failed = home.state.failures.list();
    assert!(failed.is_empty(), "no actor left failed: {failed:?}");
    home.state.stop_actors().await;
}

// Over real TCP, with the disk full: every signed search is answered (200
// or 503 with Retry-After), none is left without an answer or cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_full_disk_every_request_over_tcp_is_answered() {
    // Ballast leaves RocksDB too little to reserve its log ahead, as on a
    // disk already nearly full (see the test above).
    let disk = Tmpfs::mount("160m");
    let ballast = disk.fill("ballast", Some(120 << 20));
    let data = disk.0.path().join("data");
    let (home, node) = Home::listening(|c| c.data_dir = data).await;
    let business = home.business("Lumen", products_scope(100_000)).await;
    assert_eq!(home.publish(&business, &[product("Lumen", "L-0", "9.00")], "p0").await.status, 200);
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    let transport = Transport::new(&format!("http://{}", node.addr)).unwrap();
    let search = serde_json::to_vec(&lamp_search()).unwrap();
    let send = |n: usize| {
        let request = home.signed_request(&caller.key, "POST", "/v1/search", &search, "svc-retrieval", &[]);
        let transport = transport.clone();
        async move { (n, transport.send(request).await.map(|a| a.status).map_err(|e| e.to_string())) }
    };
    assert_eq!(send(0).await.1, Ok(200));
    let filler = disk.fill("filler", None);
    let mut answers = Vec::new();
    for round in 0..10 {
        let sent = futures::future::join_all((0..8).map(|n| send(round * 8 + n))).await;
        answers.extend(sent);
        let lamps: Vec<Vec<u8>> = (0..100).map(|n| product("Lumen", &format!("F-{round}-{n}"), "9.00")).collect();
        let _ = home.publish(&business, &lamps, &format!("f{round}")).await;
    }
    eprintln!("full disk over TCP: {answers:?}");
    let dropped: Vec<_> = answers.iter().filter(|(_, a)| a.is_err()).collect();
    assert!(dropped.is_empty(), "requests left without an answer: {dropped:?}");
    assert!(answers.iter().all(|(_, a)| matches!(a, Ok(200 | 503))), "{answers:?}");
    assert!(answers.iter().any(|(_, a)| *a == Ok(503)), "the full disk was felt: {answers:?}");
    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(ballast).unwrap();
    home.state.stop_actors().await;
}
