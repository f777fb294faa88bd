//! A person of a business's portal with a software passkey: registered
//! from an invitation and signed in through the portal's own use cases,
//! as a browser would, without one.

use serde_json::{Value, json};
use svc_core::keys::{Alg, SigningKey};
use svc_node::service::portal::{Signed, people, sessions};
use svc_store::model::PasskeyRole;

use super::Home;

pub struct PortalPerson {
    pub key: SigningKey,
    pub key_id: String,
    pub credential_id: Vec<u8>,
    /// The session registration opened.
    pub cookie: String,
    /// The authenticator's signature counter (it only moves on).
    pub counter: std::sync::atomic::AtomicU32,
}

impl PortalPerson {
    /// Invites `email` to the account as `role` and registers a passkey.
    pub async fn register(home: &Home, account_uuid: &str, email: &str, role: PasskeyRole) -> PortalPerson {
        let state = &home.state;
        let invited = people::invite(state, None, account_uuid, email, role).await.unwrap();
        let (ceremony, options) = people::begin_registration(state, &invited.token, "Ana Test").await.unwrap();
        let key = SigningKey::from_seed(Alg::Es256, &svc_core::digest::sha256(email.as_bytes())).unwrap();
        let credential_id = svc_core::digest::sha256(format!("credential {email}").as_bytes()).to_vec();
        let (rp_id, origin) = (&state.config.passkey_rp_id, &state.config.passkey_origin);
        let credential = super::passkey::register(&key, &options, rp_id, origin, &credential_id);
        let session =
            people::finish_registration(state, &ceremony, &serde_json::from_value(credential).unwrap()).await.unwrap();
        let signed = sessions::resolve(state, &session.cookie).await.unwrap();
        PortalPerson {
            key,
            key_id: signed.key_id,
            credential_id,
            cookie: session.cookie,
            counter: std::sync::atomic::AtomicU32::new(1),
        }
    }

    /// The authenticator's answer to a sign-in's options.
    pub fn assertion(&self, home: &Home, options: &Value) -> Value {
        let state = &home.state;
        let challenge = options["publicKey"]["challenge"].as_str().unwrap();
        let counter = self.counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (rp_id, origin) = (&state.config.passkey_rp_id, &state.config.passkey_origin);
        let signed = svc_core::publish::webauthn::answer(&self.key, rp_id, origin, challenge, counter).unwrap();
        let url = |std: &str| svc_core::b64::url_encode(&svc_core::b64::std_decode(std).unwrap());
        let id = svc_core::b64::url_encode(&self.credential_id);
        json!({
            "id": id,
            "rawId": id,
            "type": "public-key",
            "response": {
                "authenticatorData": url(signed.authenticator_data.as_deref().unwrap()),
                "clientDataJSON": url(signed.client_data_json.as_deref().unwrap()),
                "signature": url(&signed.sig),
                "userHandle": null,
            },
            "extensions": {},
        })
    }

    /// A DSSE envelope of `payload` signed by the passkey, as the portal's
    /// script assembles it.
    pub fn seal(&self, home: &Home, payload_type: &str, payload: &[u8]) -> svc_core::dsse::Envelope {
        let state = &home.state;
        let counter = self.counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (rp_id, origin) = (&state.config.passkey_rp_id, &state.config.passkey_origin);
        svc_core::publish::webauthn::seal_with_passkey(&self.key, rp_id, origin, payload_type, payload, counter)
            .unwrap()
    }

    /// The person as their session signs them in.
    pub async fn signed(&self, home: &Home) -> Signed {
        sessions::resolve(&home.state, &self.cookie).await.unwrap()
    }
}
