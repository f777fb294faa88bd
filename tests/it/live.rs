//! A sandbox home region served over TCP with the system clock, its corpus
//! seeded, and one AI company's retrieval key (with its sandbox grant and
//! a key file), for the tests that run programs against it (`svc client`,
//! `svc mcp`). The root anchors are pinned in a file beside the key.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use svc_client::retrieval::RetrievalClient;
use svc_clock::SystemClock;
use svc_core::keys::{Alg, SigningKey};
use svc_core::keyset::RootAnchors;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, ensure_seeded};
use svc_node::config::NodeConfig;

pub const AUTHORITY: &str = "api.svc.localhost";

pub struct Live {
    pub node: Node,
    pub dir: tempfile::TempDir,
    pub country: String,
    pub grant: String,
    pub key_file: PathBuf,
    pub key: SigningKey,
    pub anchors_file: PathBuf,
}

impl Live {
    /// The corpus drawn from `corpus_seed` (2 businesses of `products`
    /// products each); the key from `key_seed`.
    pub async fn start(corpus_seed: u64, products: usize, key_seed: u8) -> Live {
        let dir = tempfile::tempdir().unwrap();
        let loopback = "127.0.0.1:0".parse().unwrap();
        let config = NodeConfig::local_home(dir.path().join("home"), loopback, loopback);
        let node = Node::start(config, Arc::new(SystemClock)).await.unwrap();
        let corpus = generate(corpus_seed, Sizes::products_only(2, products));
        let country = corpus.businesses[0].country.clone();
        ensure_seeded(&node.state, &corpus, &|_| {}).await.unwrap();
        let company = admin(&node.state, "POST", "/admin/companies", json!({"name": "Live AI"})).await.unwrap();
        let uuid = company["ai_company_uuid"].as_str().unwrap();
        let group = admin(&node.state, "POST", &format!("/admin/companies/{uuid}/groups"), json!({"name": "bots"}))
            .await
            .unwrap();
        let key = SigningKey::from_seed(Alg::Ed25519, &[key_seed; 32]).unwrap();
        let key_file = dir.path().join("ai.json");
        svc_client::keyfile::write(&key_file, &key).unwrap();
        let group_id = group["ai_group_id"].as_str().unwrap();
        let path = format!("/admin/groups/{group_id}/retrieval-keys");
        let reg = admin(&node.state, "POST", &path, json!({"jwk": key.verifying_key().to_jwk()})).await.unwrap();
        let grant = reg["sandbox_key_grant"].as_str().unwrap().to_owned();
        let keys = &node.state.keys;
        let anchors = RootAnchors {
            classical: keys.root.classical.verifying_key(),
            post_quantum: keys.root.post_quantum.verifying_key(),
        };
        let anchors_file = dir.path().join("anchors.json");
        std::fs::write(&anchors_file, svc_client::anchors::document(&anchors).to_string()).unwrap();
        Live { node, dir, country, grant, key_file, key, anchors_file }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.node.addr)
    }

    /// The AI company's signed client, with its grant.
    pub fn client(&self) -> RetrievalClient {
        RetrievalClient::new(&self.base_url(), AUTHORITY, self.key.clone(), Some(self.grant.clone())).unwrap()
    }
}
