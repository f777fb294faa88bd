//! Web Bot Auth (issue 30, item 3): the service's outbound fetches are
//! signed and checked here by an independent verifier (Cloudflare's
//! `web-bot-auth` crate) against the key directory the service serves; a
//! caller's own `Signature-Agent` and Web Bot Auth signature ride beside
//! the retrieval signature without being mistaken for it, and the agent
//! they name is never fetched.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::HeaderValue;
use common::images::ImageServer;
use common::*;
use serde_json::json;
use web_bot_auth::components::{CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters};
use web_bot_auth::keyring::{JSONWebKeySet, KeyRing};
use web_bot_auth::message_signatures::{MessageVerifier, SignedMessage};
use web_bot_auth::{SignatureAgentLink, WebBotAuthVerifier};

/// A message as a site receiving it would read it: its authority and its
/// header fields (names lower-cased).
struct Received {
    authority: String,
    fields: Vec<(String, String)>,
}

impl Received {
    fn from_head(head: &str, authority: &str) -> Received {
        let fields = head
            .lines()
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Received { authority: authority.to_owned(), fields }
    }

    fn field(&self, name: &str) -> Vec<String> {
        self.fields.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect()
    }
}

impl SignedMessage for Received {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(HTTPField { name, parameters }) => {
                let key = parameters.0.iter().find_map(|p| match p {
                    HTTPFieldParameters::Key(key) => Some(key.clone()),
                    _ => None,
                });
                let values = self.field(name);
                match key {
                    // A dictionary member's value, as RFC 9421 §2.1.2 asks.
                    Some(key) => values
                        .iter()
                        .flat_map(|v| v.split(", "))
                        .filter_map(|member| member.strip_prefix(&format!("{key}=")))
                        .map(str::to_owned)
                        .collect(),
                    None => values,
                }
            }
            CoveredComponent::Derived(DerivedComponent::Authority { .. }) => vec![self.authority.clone()],
            _ => vec![],
        }
    }
}

/// The directory as a verifier fetches it, in a key ring by thumbprint.
async fn directory(home: &Home) -> (KeyRing, common::Answer) {
    let answer = home.get("/.well-known/http-message-signatures-directory").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let jwks: JSONWebKeySet = serde_json::from_slice(&answer.bytes).unwrap();
    let mut ring = KeyRing::default();
    assert!(ring.import_jwks(jwks).iter().all(Option::is_none), "every listed key imports");
    (ring, answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_services_fetches_are_signed_and_verify_against_its_published_directory() {
    let images = ImageServer::start().await;
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| images.trust(config)).await;
    let bytes = home.state.images.fetch(&images.url("/square.png")).await.unwrap();
    assert!(!bytes.is_empty());
    let head = images.heads.lock().unwrap().last().unwrap().clone();
    let received = Received::from_head(&head, &format!("localhost:{}", images.port));
    assert_eq!(received.field("signature-agent"), vec![format!("agent1=\"https://{AUTHORITY}\"")]);

    let (ring, answer) = directory(&home).await;
    assert_eq!(answer.headers["content-type"], "application/http-message-signatures-directory+json");
    assert!(answer.body["keys"][0].get("d").is_none());

    let verifier = WebBotAuthVerifier::parse(&received).expect("a Web Bot Auth message");
    assert_eq!(
        verifier.get_signature_agents(),
        &vec![SignatureAgentLink::External(format!("https://{AUTHORITY}"))],
        "the agent is the deployment's origin"
    );
    verifier.verify(&ring, None).expect("the fetch's signature verifies under the directory's key");

    // Another authority than the one signed does not verify.
    let elsewhere = Received { authority: "localhost:1".into(), fields: received.fields.clone() };
    assert!(WebBotAuthVerifier::parse(&elsewhere).unwrap().verify(&ring, None).is_err());

    // The directory's own answer is signed over the authority it was asked at.
    let mut fields = vec![];
    for name in ["signature-input", "signature"] {
        fields.push((name.to_owned(), answer.headers[name].to_str().unwrap().to_owned()));
    }
    assert!(fields[0].1.contains("tag=\"http-message-signatures-directory\""), "{fields:?}");
    let response = Received { authority: AUTHORITY.into(), fields };
    MessageVerifier::parse(&response, |_| true).unwrap().verify(&ring, None).expect("the directory's answer verifies");
    let wrong_host = Received { authority: "evil.example".into(), fields: response.fields.clone() };
    assert!(MessageVerifier::parse(&wrong_host, |_| true).unwrap().verify(&ring, None).is_err());
}

// rule: R5.25
#[tokio::test(flavor = "multi_thread")]
async fn a_callers_signature_agent_rides_beside_its_retrieval_signature_and_is_never_fetched() {
    let home = Home::start().await;
    let caller = home.caller("Agentic").await;
    // Where the caller's agent says its keys are: a listener that counts.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let agent = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let body = serde_json::to_vec(&json!({"collection": "products", "q": "lampe", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"}))
        .unwrap();
    let search = |extra: bool, agent_only: bool| {
        let mut request = home.signed_request(&caller.key, "POST", "/v1/search", &body, "svc-retrieval", &[]);
        let headers = request.headers_mut();
        headers.insert("signature-agent", HeaderValue::from_str(&format!("agent1=\"{agent}\"")).unwrap());
        if extra {
            // The caller's own Web Bot Auth signature under another label.
            let input = headers["signature-input"].to_str().unwrap().to_owned();
            let signature = headers["signature"].to_str().unwrap().to_owned();
            let wba = "wba=(\"@authority\" \"signature-agent\";key=\"agent1\");created=1;expires=2;keyid=\"k\";tag=\"web-bot-auth\"";
            headers.insert("signature-input", HeaderValue::from_str(&format!("{input}, {wba}")).unwrap());
            headers.insert("signature", HeaderValue::from_str(&format!("{signature}, wba=:AAAA:")).unwrap());
        }
        if agent_only {
            // Only a Web Bot Auth signature: not the retrieval signature.
            headers.insert(
                "signature-input",
                HeaderValue::from_static("sig1=(\"@authority\");created=1;expires=2;keyid=\"k\";tag=\"web-bot-auth\""),
            );
        }
        request
    };
    let with_agent = home.send(search(false, false)).await;
    assert_eq!(with_agent.status, 200, "{:?}", with_agent.body);
    let with_both = home.send(search(true, false)).await;
    assert_eq!(with_both.status, 200, "{:?}", with_both.body);
    let agent_only = home.send(search(false, true)).await;
    assert_eq!(agent_only.status, 401, "{:?}", agent_only.body);
    assert_eq!(agent_only.body["code"], "signature_invalid");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(connections.load(Ordering::SeqCst), 0, "the agent a caller names is never fetched");
}
