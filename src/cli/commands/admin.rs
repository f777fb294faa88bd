//! `svc admin ...`: the operator's commands. Each one calls the admin API and
//! prints its JSON answer. Passkey ceremonies (mandates, AI policies) are
//! scripted with a software authenticator over a passkey key file.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use svc_core::time::{DAY, UnixMs};

use super::CliError;
use svc_client::ClientError;
use svc_client::admin::Admin;
use svc_client::keyfile;
use svc_client::sealing::{self, Passkey, SealContext};

#[derive(Debug, Args)]
pub struct AdminArgs {
    /// The node's admin API (`http://` or `https://`).
    #[arg(long, env = "SVC_ADMIN_URL", default_value = "http://127.0.0.1:8081")]
    pub url: String,
    /// A CA certificate (PEM) to believe over `https://` beside the
    /// system's roots: a deployment's own.
    #[arg(long, env = "SVC_CA")]
    pub ca: Option<PathBuf>,
    /// The operator's token; read from `--token-file` when absent.
    #[arg(long, env = "SVC_ADMIN_TOKEN")]
    pub token: Option<String>,
    /// Where `svc up` wrote the token.
    #[arg(long, default_value = "svc-data/home/admin_token")]
    pub token_file: PathBuf,
    /// Print the answer's exact JSON (also when stdout is not a terminal);
    /// at a terminal, without it, `observe` is a table of the actors.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// The node's region, role, environment, authority and passkey relying party.
    #[command(after_help = "Example:\n  svc admin config")]
    Config,
    /// Snapshots of the node's actors.
    #[command(after_help = "Example:\n  svc admin observe          # a table at a terminal; --json for the JSON")]
    Observe,
    #[command(subcommand)]
    #[command(
        after_help = "Example:\n  svc admin business create --legal-name \"Atelier Nord SAS\" --country FR --brand \"Atelier Nord\""
    )]
    Business(BusinessCommand),
    #[command(subcommand)]
    #[command(after_help = "Example:\n  svc admin key register <uuid> --key-file integration.json")]
    Key(KeyCommand),
    #[command(subcommand)]
    #[command(
        after_help = "Example:\n  svc admin mandate seal --passkey passkey.json --business <uuid> --key-id <key_id> --countries FR,DE"
    )]
    Mandate(MandateCommand),
    #[command(subcommand, name = "ai-policy")]
    #[command(
        after_help = "Example:\n  svc admin ai-policy seal --passkey passkey.json --business <uuid> --record policy.json"
    )]
    AiPolicy(AiPolicyCommand),
    #[command(subcommand)]
    #[command(after_help = "Example:\n  svc admin push release <push_id> --passkey passkey.json --business <uuid>")]
    Push(PushCommand),
    #[command(subcommand)]
    #[command(after_help = "Example:\n  svc admin company create --name \"Example AI\" --verified")]
    Company(CompanyCommand),
    #[command(subcommand)]
    #[command(after_help = "Example:\n  svc admin group create <ai_company_uuid> --name assistants")]
    Group(GroupCommand),
    #[command(subcommand, name = "retrieval-key")]
    #[command(after_help = "Example:\n  svc admin retrieval-key register <ai_group_id> --key-file ai.json")]
    RetrievalKey(RetrievalKeyCommand),
    #[command(subcommand)]
    #[command(after_help = "Example:\n  svc admin campaign show <campaign_id>")]
    Campaign(CampaignCommand),
    #[command(subcommand)]
    #[command(
        after_help = "Example:\n  svc admin record save --business <uuid> --type ads --passkey passkey.json --file examples/ad.json"
    )]
    Record(RecordCommand),
    /// A business blocks (or unblocks) an AI group.
    #[command(after_help = "Example:\n  svc admin block --business <uuid> --group <ai_group_id>")]
    Block {
        #[arg(long)]
        business: String,
        #[arg(long)]
        group: String,
        #[arg(long)]
        unblock: bool,
    },
    /// Sets a company's prepay allowance.
    #[command(after_help = "Example:\n  svc admin allowance --company <ai_company_uuid> --prepay --remaining 10000")]
    Allowance {
        #[arg(long)]
        company: String,
        #[arg(long)]
        prepay: bool,
        #[arg(long)]
        remaining: i64,
    },
    /// Suspends a business's authorised endpoints (domain assurance lost),
    /// or restores them.
    #[command(after_help = "Example:\n  svc admin endpoints --business <uuid> --reason \"phishing report 4411\"")]
    Endpoints {
        #[arg(long)]
        business: String,
        #[arg(long)]
        restore: bool,
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Publishes the sandbox corpus again: new versions, same ids and bytes.
    #[command(name = "sandbox-republish")]
    #[command(after_help = "Example:\n  svc admin sandbox-republish")]
    SandboxRepublish,
    /// Draws the region's next receipt key and asks home to certify it (run
    /// against the region's own admin API, with its token).
    #[command(
        after_help = "Example:\n  svc admin --url http://127.0.0.1:8111 --token-file svc-data/eu/admin_token rotate-receipt-key"
    )]
    RotateReceiptKey,
    /// Sequences the transparency log's waiting leaves now and signs a
    /// checkpoint (home), without waiting for the hour.
    #[command(after_help = "Example:\n  svc admin log-sequence")]
    LogSequence,
    /// Asks every configured witness missing from the newest checkpoint for
    /// its cosignature now (home); prints each witness's state.
    #[command(after_help = "Example:\n  svc admin log-cosign")]
    LogCosign,
    /// Follows one request across nodes: every hop of trace `trace_id`
    /// (the `traceresponse` an answer carried, or a log line's `trace_id`)
    /// that this node and each `--node` served lately, in the order they began.
    #[command(
        after_help = "Example:\n  svc admin trace 4bf92f3577b34da6a3ce929d0e0e4736 --node http://127.0.0.1:8111=svc-data/eu/admin_token"
    )]
    Trace {
        trace_id: String,
        /// Another node's admin API: `URL`, or `URL=TOKEN_FILE` when its
        /// token differs (`svc up`: `http://127.0.0.1:8111=svc-data/eu/admin_token`).
        #[arg(long = "node")]
        nodes: Vec<String>,
    },
    /// Draws a successor for one of home's own keys (`issuance`,
    /// `statement`, `projection`, `sidecar`, `log_checkpoint`); the old one
    /// closes an hour later.
    #[command(after_help = "Example:\n  svc admin service-key-rotate --purpose projection")]
    ServiceKeyRotate {
        #[arg(long)]
        purpose: String,
    },
    /// Ends one of the service's own keys in the key set (home): retired
    /// from `--valid-until`, or compromised from `--compromised-at`.
    #[command(after_help = "Example:\n  svc admin service-key-end <kid> --compromised-at 2026-11-29T10:00:00Z")]
    ServiceKeyEnd {
        #[arg(allow_hyphen_values = true)]
        kid: String,
        #[arg(long)]
        valid_until: Option<String>,
        #[arg(long)]
        compromised_at: Option<String>,
    },
    /// Publishes a version of the AI-company Terms.
    #[command(
        after_help = "Example:\n  svc admin terms --version 2 --text-file terms-v2.md --effective-from 2026-12-01T00:00:00Z"
    )]
    Terms {
        #[arg(long)]
        version: u64,
        #[arg(long)]
        text_file: PathBuf,
        #[arg(long)]
        effective_from: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum BusinessCommand {
    /// Creates a verified business and issues its first certificate.
    #[command(
        after_help = "Example:\n  svc admin business create --legal-name \"Atelier Nord SAS\" --country FR --brand \"Atelier Nord\" --owner-email owner@atelier-nord.example"
    )]
    Create {
        #[arg(long)]
        legal_name: String,
        #[arg(long)]
        country: String,
        /// A brand the business owns or sells (repeatable).
        #[arg(long = "brand")]
        brands: Vec<String>,
        /// The first owner's e-mail address: answers their portal invitation link.
        #[arg(long)]
        owner_email: Option<String>,
    },
    /// The business, its certificate in force and its AI policy version.
    #[command(after_help = "Example:\n  svc admin business show <uuid>")]
    Show { uuid: String },
    /// Invites an owner to the business portal (another, when the owners
    /// lost their passkeys); answers the invitation link, shown once.
    #[command(after_help = "Example:\n  svc admin business invite-owner <uuid> --email owner@atelier-nord.example")]
    InviteOwner {
        uuid: String,
        #[arg(long)]
        email: String,
    },
    /// A certificate status change (a new issuance).
    #[command(
        after_help = "Example:\n  svc admin business status <uuid> --status suspended --reason \"unpaid invoice\""
    )]
    Status {
        uuid: String,
        #[arg(long)]
        status: String,
        #[arg(long)]
        effective_from: Option<String>,
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Registers the public half of a key file: an integration key or a passkey.
    #[command(
        after_help = "Example:\n  svc admin key register <uuid> --key-file passkey.json --purpose sealing --role owner"
    )]
    Register {
        business: String,
        #[arg(long)]
        key_file: PathBuf,
        /// `integration` or `sealing` (a passkey).
        #[arg(long, default_value = "integration")]
        purpose: String,
        /// Passkeys: `owner`, `admin` or `developer`.
        #[arg(long)]
        role: Option<String>,
        #[arg(long)]
        valid_until: Option<String>,
    },
    /// Re-states who holds a key (`hosted` or `self`): a new signed statement.
    #[command(after_help = "Example:\n  svc admin key custody <key_id> --custody self")]
    Custody {
        #[arg(allow_hyphen_values = true)]
        key_id: String,
        #[arg(long)]
        custody: String,
        #[arg(long)]
        effective_from: Option<String>,
    },
    /// Revokes a key, optionally naming the moment it was compromised.
    #[command(after_help = "Example:\n  svc admin key revoke <key_id> --compromised-at 2026-11-29T10:00:00Z")]
    Revoke {
        #[arg(allow_hyphen_values = true)]
        key_id: String,
        #[arg(long)]
        effective_from: Option<String>,
        #[arg(long)]
        compromised_at: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MandateCommand {
    /// Seals a mandate for an integration key with an owner's or admin's passkey.
    #[command(
        after_help = "Example:\n  svc admin mandate seal --passkey passkey.json --business <uuid> --key-id <key_id> --countries FR,DE"
    )]
    Seal {
        #[arg(long)]
        passkey: PathBuf,
        #[arg(long)]
        business: String,
        /// A key id is a base64url thumbprint, which may begin with `-`.
        #[arg(long, allow_hyphen_values = true)]
        key_id: String,
        #[arg(long, default_value = "m-1")]
        id: String,
        #[arg(long, value_delimiter = ',', default_value = "products")]
        record_types: Vec<String>,
        #[arg(long, value_delimiter = ',', required = true)]
        countries: Vec<String>,
        #[arg(long, default_value_t = 100_000)]
        records_per_hour: u64,
        #[arg(long, default_value_t = 1 << 30)]
        bytes_per_day: u64,
        /// Validity in days from now (at most 92).
        #[arg(long, default_value_t = 92)]
        days: i64,
    },
    /// Revokes a mandate now.
    #[command(after_help = "Example:\n  svc admin mandate revoke <key_id> m-1")]
    Revoke {
        #[arg(allow_hyphen_values = true)]
        key_id: String,
        mandate_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AiPolicyCommand {
    /// Seals the next version of a business's AI policy with a passkey.
    #[command(
        after_help = "Example:\n  svc admin ai-policy seal --passkey passkey.json --business <uuid> --record policy.json"
    )]
    Seal {
        #[arg(long)]
        passkey: PathBuf,
        #[arg(long)]
        business: String,
        /// The `service/ai_policy/1` record, exact bytes.
        #[arg(long)]
        record: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum PushCommand {
    /// An owner or admin releases a held push with their passkey: publish
    /// its held records, or discard them.
    #[command(
        after_help = "Example:\n  svc admin push release <push_id> --passkey passkey.json --business <uuid> --decision discard"
    )]
    Release {
        push_id: String,
        #[arg(long)]
        passkey: PathBuf,
        #[arg(long)]
        business: String,
        /// `publish` or `discard`.
        #[arg(long, default_value = "publish")]
        decision: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CompanyCommand {
    #[command(
        after_help = "Example:\n  svc admin company create --name \"Example AI\" --verified --owner-email owner@example-ai.example"
    )]
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        verified: bool,
        /// The Terms version the company accepted.
        #[arg(long)]
        terms_accepted: Option<u64>,
        /// The first owner, invited to the AI-company portal.
        #[arg(long)]
        owner_email: Option<String>,
    },
    /// Invites an owner to the AI-company portal; answers the link, shown once.
    #[command(
        after_help = "Example:\n  svc admin company invite-owner <ai_company_uuid> --email owner@example-ai.example"
    )]
    InviteOwner {
        uuid: String,
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum RecordCommand {
    /// Seals a record with a person's passkey file and saves it, as the
    /// portal's *Review and seal* does (Path B, scripted). Any record type;
    /// `ai_policy` seals the next policy version.
    ///
    /// Example: `svc admin record save --business <uuid> --type ads --passkey passkey.json --file ad.json`
    #[command(
        after_help = "Example:\n  svc admin record save --business <uuid> --type ads --passkey passkey.json --file examples/ad.json"
    )]
    Save {
        #[arg(long)]
        business: String,
        /// `products`, `business_files`, `events`, `jobs`, `updates`, `ads` or `ai_policy`.
        #[arg(long = "type")]
        record_type: String,
        #[arg(long)]
        passkey: PathBuf,
        /// The record, exact bytes: what the passkey signs.
        #[arg(long)]
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// A campaign's terms, items, state and money (funded, leased, spent, left).
    #[command(after_help = "Example:\n  svc admin campaign show <campaign_id>")]
    Show { campaign: String },
    /// Makes a business's campaign from a JSON file `{terms, items}` (the
    /// portal's form, scripted); it is active and unfunded.
    #[command(
        after_help = "Example:\n  svc admin campaign create <uuid> --file examples/campaign.json --item <ad record_id>"
    )]
    Create {
        business: String,
        #[arg(long)]
        file: PathBuf,
        /// A record the campaign places, added to the file's `items` (repeatable).
        #[arg(long = "item")]
        items: Vec<String>,
    },
    /// Adds funds, in dollars (a decimal string).
    #[command(after_help = "Example:\n  svc admin campaign fund <campaign_id> --amount 10.00")]
    Fund {
        campaign: String,
        #[arg(long)]
        amount: String,
    },
    /// Pauses, resumes (`active`) or ends a campaign.
    #[command(after_help = "Example:\n  svc admin campaign state <campaign_id> --state paused")]
    State {
        campaign: String,
        #[arg(long)]
        state: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    #[command(after_help = "Example:\n  svc admin group create <ai_company_uuid> --name assistants")]
    Create {
        company: String,
        #[arg(long)]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum RetrievalKeyCommand {
    /// Registers a retrieval key; in the sandbox the answer carries the grant and bearer token.
    #[command(after_help = "Example:\n  svc admin retrieval-key register <ai_group_id> --key-file ai.json")]
    Register {
        group: String,
        #[arg(long)]
        key_file: PathBuf,
    },
    /// Ends a retrieval key: its signatures are refused from now on.
    #[command(after_help = "Example:\n  svc admin retrieval-key revoke <key_id>")]
    Revoke {
        #[arg(allow_hyphen_values = true)]
        key_id: String,
    },
}

fn token(args: &AdminArgs) -> Result<String, CliError> {
    match &args.token {
        Some(t) => Ok(t.clone()),
        None => std::fs::read_to_string(&args.token_file)
            .map(|t| t.trim().to_owned())
            .map_err(|source| CliError::TokenFile { path: args.token_file.clone(), source }),
    }
}

fn now() -> UnixMs {
    use svc_clock::Clock;
    svc_clock::SystemClock.now()
}

/// Every node's hops of one trace, merged in the order they began.
async fn follow(first: &Admin, url: &str, trace_id: &str, nodes: &[String]) -> Result<Value, ClientError> {
    let path = format!("/admin/traces/{trace_id}");
    let mut hops = Vec::new();
    let mut asked = vec![url.to_owned()];
    let mut answers = vec![first.call("GET", &path, None).await?];
    for node in nodes {
        let (url, token) = match node.split_once('=') {
            Some((url, file)) => {
                let token = std::fs::read_to_string(file)
                    .map_err(|source| ClientError::Io { path: file.into(), source })?
                    .trim()
                    .to_owned();
                (url, token)
            }
            None => (node.as_str(), first.token().to_owned()),
        };
        answers.push(Admin::new(url, token)?.trusting(first.trust())?.call("GET", &path, None).await?);
        asked.push(url.to_owned());
    }
    for answer in answers {
        if let Some(served) = answer["served"].as_array() {
            hops.extend(served.iter().cloned());
        }
    }
    hops.sort_by(|a, b| a["started_at"].as_str().cmp(&b["started_at"].as_str()));
    Ok(json!({ "trace_id": trace_id, "nodes": asked, "hops": hops }))
}

pub async fn run(args: AdminArgs) -> Result<Value, CliError> {
    let trust = svc_client::trust::Trust::with_ca(args.ca.as_deref())?;
    let admin = Admin::new(&args.url, token(&args)?)?.trusting(&trust)?;
    let answer = match args.command {
        AdminCommand::Config => admin.call("GET", "/admin/config", None).await,
        AdminCommand::Observe => admin.call("GET", "/admin/observe", None).await,
        AdminCommand::Business(BusinessCommand::Create { legal_name, country, brands, owner_email }) => {
            let mut body = json!({"legal_name": legal_name, "country": country, "brands": brands});
            if let Some(email) = owner_email {
                body["owner_email"] = json!(email);
            }
            admin.call("POST", "/admin/businesses", Some(body)).await
        }
        AdminCommand::Business(BusinessCommand::Show { uuid }) => {
            admin.call("GET", &format!("/admin/businesses/{uuid}"), None).await
        }
        AdminCommand::Business(BusinessCommand::InviteOwner { uuid, email }) => {
            let body = json!({"email": email});
            admin.call("POST", &format!("/admin/businesses/{uuid}/owner-invitation"), Some(body)).await
        }
        AdminCommand::Business(BusinessCommand::Status { uuid, status, effective_from, reason }) => {
            let body = json!({"status": status, "effective_from": effective_from, "reason": reason});
            admin.call("POST", &format!("/admin/businesses/{uuid}/certificate-status"), Some(body)).await
        }
        AdminCommand::Key(KeyCommand::Register { business, key_file, purpose, role, valid_until }) => {
            let key = keyfile::read(&key_file)?;
            let body = json!({"jwk": key.verifying_key().to_jwk(), "purpose": purpose, "role": role,
                "valid_until": valid_until});
            admin.call("POST", &format!("/admin/businesses/{business}/keys"), Some(body)).await
        }
        AdminCommand::Key(KeyCommand::Custody { key_id, custody, effective_from }) => {
            let body = json!({"custody": custody, "effective_from": effective_from});
            admin.call("POST", &format!("/admin/keys/{key_id}/custody"), Some(body)).await
        }
        AdminCommand::Key(KeyCommand::Revoke { key_id, effective_from, compromised_at }) => {
            let body = json!({"effective_from": effective_from, "compromised_at": compromised_at});
            admin.call("POST", &format!("/admin/keys/{key_id}/revoke"), Some(body)).await
        }
        AdminCommand::Mandate(MandateCommand::Seal {
            passkey,
            business,
            key_id,
            id,
            record_types,
            countries,
            records_per_hour,
            bytes_per_day,
            days,
        }) => {
            let config = admin.call("GET", "/admin/config", None).await?;
            let key = keyfile::read(&passkey)?;
            let now = now();
            let payload = sealing::mandate_payload(
                &id,
                &business,
                &key_id,
                &record_types,
                &countries,
                records_per_hour,
                bytes_per_day,
                now.minus(60_000),
                now.plus(days.clamp(1, 92) * DAY - 120_000),
            );
            let envelope = passkey_of(&key, &config)?.seal_mandate(&payload)?;
            admin.call("POST", "/admin/mandates", Some(json!({"envelope": envelope}))).await
        }
        AdminCommand::Mandate(MandateCommand::Revoke { key_id, mandate_id }) => {
            admin.call("POST", &format!("/admin/mandates/{key_id}/{mandate_id}/revoke"), None).await
        }
        AdminCommand::AiPolicy(AiPolicyCommand::Seal { passkey, business, record }) => {
            let config = admin.call("GET", "/admin/config", None).await?;
            let shown = admin.call("GET", &format!("/admin/businesses/{business}"), None).await?;
            let key = keyfile::read(&passkey)?;
            let bytes = std::fs::read(&record).map_err(|source| CliError::Io { path: record.clone(), source })?;
            return seal_ai_policy(&admin, &config, &shown, &key, &business, &bytes, now()).await;
        }
        AdminCommand::Push(PushCommand::Release { push_id, passkey, business, decision }) => {
            let config = admin.call("GET", "/admin/config", None).await?;
            let key = keyfile::read(&passkey)?;
            let envelope = passkey_of(&key, &config)?.seal_release(&push_id, &business, &decision, now())?;
            admin.call("POST", &format!("/admin/pushes/{push_id}/release"), Some(json!({"envelope": envelope}))).await
        }
        AdminCommand::Company(CompanyCommand::Create { name, verified, terms_accepted, owner_email }) => {
            let mut body = json!({"name": name, "verified": verified, "terms_accepted": terms_accepted});
            if let Some(email) = owner_email {
                body["owner_email"] = json!(email);
            }
            admin.call("POST", "/admin/companies", Some(body)).await
        }
        AdminCommand::Company(CompanyCommand::InviteOwner { uuid, email }) => {
            let body = json!({"email": email});
            admin.call("POST", &format!("/admin/companies/{uuid}/owner-invitation"), Some(body)).await
        }
        AdminCommand::Record(RecordCommand::Save { business, record_type, passkey, file }) => {
            let config = admin.call("GET", "/admin/config", None).await?;
            let shown = admin.call("GET", &format!("/admin/businesses/{business}"), None).await?;
            let key = keyfile::read(&passkey)?;
            let bytes = std::fs::read(&file).map_err(|source| CliError::Io { path: file.clone(), source })?;
            if record_type == "ai_policy" {
                return seal_ai_policy(&admin, &config, &shown, &key, &business, &bytes, now()).await;
            }
            let context = SealContext {
                cert_id: shown["cert_id"]
                    .as_str()
                    .ok_or(CliError::Missing("the business has no certificate in force"))?
                    .to_owned(),
                ai_policy_version: shown["ai_policy_version"].as_u64().unwrap_or(0),
            };
            let seal = passkey_of(&key, &config)?.seal_record(&context, &record_type, &bytes, now(), None)?;
            let body = json!({"record_type": record_type, "record_base64": svc_core::b64::std_encode(&bytes),
                "seal": seal});
            admin.call("POST", &format!("/admin/businesses/{business}/records"), Some(body)).await
        }
        AdminCommand::Campaign(CampaignCommand::Show { campaign }) => {
            admin.call("GET", &format!("/admin/campaigns/{campaign}"), None).await
        }
        AdminCommand::Campaign(CampaignCommand::Create { business, file, items }) => {
            let text = std::fs::read(&file).map_err(|source| CliError::Io { path: file.clone(), source })?;
            let mut body: Value =
                serde_json::from_slice(&text).map_err(|source| CliError::JsonFile { path: file.clone(), source })?;
            if let Some(fields) = body.as_object_mut().filter(|_| !items.is_empty()) {
                let listed = fields.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                fields.insert("items".into(), listed.into_iter().chain(items.into_iter().map(Value::from)).collect());
            }
            admin.call("POST", &format!("/admin/businesses/{business}/campaigns"), Some(body)).await
        }
        AdminCommand::Campaign(CampaignCommand::Fund { campaign, amount }) => {
            let body = json!({"amount": amount});
            admin.call("POST", &format!("/admin/campaigns/{campaign}/funds"), Some(body)).await
        }
        AdminCommand::Campaign(CampaignCommand::State { campaign, state }) => {
            let body = json!({"state": state});
            admin.call("POST", &format!("/admin/campaigns/{campaign}/state"), Some(body)).await
        }
        AdminCommand::Group(GroupCommand::Create { company, name }) => {
            admin.call("POST", &format!("/admin/companies/{company}/groups"), Some(json!({"name": name}))).await
        }
        AdminCommand::RetrievalKey(RetrievalKeyCommand::Register { group, key_file }) => {
            let key = keyfile::read(&key_file)?;
            let body = json!({"jwk": key.verifying_key().to_jwk()});
            admin.call("POST", &format!("/admin/groups/{group}/retrieval-keys"), Some(body)).await
        }
        AdminCommand::RetrievalKey(RetrievalKeyCommand::Revoke { key_id }) => {
            admin.call("POST", &format!("/admin/retrieval-keys/{key_id}/revoke"), None).await
        }
        AdminCommand::Block { business, group, unblock } => {
            let body = json!({"business_uuid": business, "ai_group_id": group, "blocked": !unblock});
            admin.call("POST", "/admin/blocks", Some(body)).await
        }
        AdminCommand::Allowance { company, prepay, remaining } => {
            let body = json!({"ai_company_uuid": company, "prepay": prepay, "remaining": remaining});
            admin.call("POST", "/admin/allowances", Some(body)).await
        }
        AdminCommand::Endpoints { business, restore, reason } => {
            let body = json!({"business_uuid": business, "suspended": !restore, "reason": reason});
            admin.call("POST", "/admin/endpoints", Some(body)).await
        }
        AdminCommand::SandboxRepublish => admin.call("POST", "/admin/sandbox/republish", None).await,
        AdminCommand::RotateReceiptKey => admin.call("POST", "/admin/receipt-key/rotate", None).await,
        AdminCommand::ServiceKeyRotate { purpose } => {
            admin.call("POST", "/admin/service-keys/rotate", Some(json!({"purpose": purpose}))).await
        }
        AdminCommand::LogSequence => admin.call("POST", "/admin/log/sequence", None).await,
        AdminCommand::LogCosign => admin.call("POST", "/admin/log/cosign", None).await,
        AdminCommand::Trace { trace_id, nodes } => follow(&admin, &args.url, &trace_id, &nodes).await,
        AdminCommand::ServiceKeyEnd { kid, valid_until, compromised_at } => {
            let body = json!({"valid_until": valid_until, "compromised_at": compromised_at});
            admin.call("POST", &format!("/admin/service-keys/{kid}/end"), Some(body)).await
        }
        AdminCommand::Terms { version, text_file, effective_from } => {
            let text = std::fs::read_to_string(&text_file)
                .map_err(|source| CliError::Io { path: text_file.clone(), source })?;
            let body = json!({"version": version, "text": text, "effective_from": effective_from});
            admin.call("POST", "/admin/terms", Some(body)).await
        }
    };
    Ok(answer?)
}

/// The software authenticator for the node's relying party.
pub fn passkey_of<'a>(key: &'a svc_core::keys::SigningKey, config: &'a Value) -> Result<Passkey<'a>, CliError> {
    let rp_id = config["passkey_rp_id"].as_str().ok_or(CliError::Missing("the node names no passkey relying party"))?;
    let origin = config["passkey_origin"].as_str().ok_or(CliError::Missing("the node names no passkey origin"))?;
    Ok(Passkey { key, rp_id, origin })
}

/// Seals the next AI policy version over `bytes` and registers it.
pub async fn seal_ai_policy(
    admin: &Admin,
    config: &Value,
    shown: &Value,
    key: &svc_core::keys::SigningKey,
    business: &str,
    bytes: &[u8],
    now: UnixMs,
) -> Result<Value, CliError> {
    let current = shown["ai_policy_version"].as_u64().unwrap_or(0);
    let cert_id = shown["cert_id"].as_str().ok_or(CliError::Missing("the business has no certificate in force"))?;
    let context = SealContext { cert_id: cert_id.to_owned(), ai_policy_version: current };
    let seal = passkey_of(key, config)?.seal_record(&context, "ai_policy", bytes, now, Some(current + 1))?;
    let body = json!({"record_base64": svc_core::b64::std_encode(bytes), "seal": seal});
    Ok(admin.call("POST", &format!("/admin/businesses/{business}/ai-policy"), Some(body)).await?)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::commands::{Cli, Command};

    /// A key id is a base64url thumbprint: one in 64 begins with `-`,
    /// which must still read as the value, never as a flag.
    #[test]
    fn a_key_id_that_begins_with_a_hyphen_is_a_value() {
        let id = "-xZ1fj3dKHbb6TQD2XmV4XLqxXR2NqPjz8v6oK5kZt0";
        let parse = |args: &[&str]| {
            let cli =
                Cli::try_parse_from([&["svc", "admin"], args].concat()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            match cli.command {
                Command::Admin(admin) => admin.command,
                _ => unreachable!(),
            }
        };
        let seal = ["mandate", "seal", "--passkey", "p.json", "--business", "b", "--key-id", id, "--countries", "FR"];
        assert!(matches!(parse(&seal), AdminCommand::Mandate(MandateCommand::Seal { key_id, .. }) if key_id == id));
        assert!(
            matches!(parse(&["key", "revoke", id]), AdminCommand::Key(KeyCommand::Revoke { key_id, .. }) if key_id == id)
        );
        assert!(matches!(
            parse(&["mandate", "revoke", id, "m1"]),
            AdminCommand::Mandate(MandateCommand::Revoke { key_id, .. }) if key_id == id
        ));
        assert!(matches!(
            parse(&["retrieval-key", "revoke", id]),
            AdminCommand::RetrievalKey(RetrievalKeyCommand::Revoke { key_id }) if key_id == id
        ));
    }
}
