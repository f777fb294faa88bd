//! Every file in `regions/`, `deploy/compose/` and `deploy/production/` is
//! a valid node configuration, and each folder makes one deployment
//! (`config::check_deployment`): `regions/` on one host, `deploy/compose/`
//! one container per region, `deploy/production/` one host per region.

use svc_http::front_door::FrontDoorConfig;
use svc_node::config::{Hosts, NodeConfig, RegionCredential, ReplicationConfig, Role, check_deployment};

fn load(path: &std::path::Path) -> NodeConfig {
    let text = std::fs::read_to_string(path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn regions() -> Vec<NodeConfig> {
    folder("regions")
}

fn folder(name: &str) -> Vec<NodeConfig> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let nodes = files.iter().filter(|p| p.extension().is_some_and(|e| e == "toml") && !p.ends_with("front-door.toml"));
    nodes.map(|p| load(p)).collect()
}

#[test]
fn the_localhost_deployment_is_one_home_and_at_least_two_read_regions() {
    let regions = regions();
    for region in regions.iter().chain(&folder("deploy/compose")) {
        region.check_plain_http().unwrap_or_else(|e| panic!("{}: {e}", region.region));
    }
    assert_eq!(regions.iter().filter(|r| r.role == Role::Home).count(), 1);
    assert!(regions.iter().filter(|r| r.role == Role::Read).count() >= 2);
    check_deployment(&regions, Hosts::One).unwrap();
}

#[test]
fn the_compose_deployment_is_one_home_and_two_read_regions_in_their_own_containers() {
    let regions = folder("deploy/compose");
    assert_eq!(regions.iter().filter(|r| r.role == Role::Home).count(), 1);
    assert_eq!(regions.iter().filter(|r| r.role == Role::Read).count(), 2);
    check_deployment(&regions, Hosts::Many).unwrap();
    // Every container uses the same folder and names home by its service:
    // not a deployment on one host.
    assert!(check_deployment(&regions, Hosts::One).is_err());
    let mut astray = regions;
    let read = astray.iter().position(|r| r.role == Role::Read).unwrap();
    astray[read].replication.as_mut().unwrap().home_url = Some("http://home:7999".into());
    assert!(check_deployment(&astray, Hosts::Many).unwrap_err().to_string().contains("home_url"));
}

#[test]
fn the_production_example_is_one_deployment_safe_by_default_with_mutual_tls() {
    let regions = folder("deploy/production");
    assert_eq!(regions.iter().filter(|r| r.role == Role::Home).count(), 1);
    assert_eq!(regions.iter().filter(|r| r.role == Role::Read).count(), 2);
    check_deployment(&regions, Hosts::Many).unwrap();
    for region in &regions {
        let name = &region.region;
        assert_eq!(region.environment, svc_store::model::Environment::Production, "{name}");
        region.check_production().unwrap_or_else(|e| panic!("{name}: {e}"));
        region.check_link_tls().unwrap_or_else(|e| panic!("{name}: {e}"));
        let tls = region.tls.as_ref().unwrap();
        assert_eq!(tls.cert, std::path::Path::new(&format!("tls/{name}.pem")), "{name}");
        assert!(!region.allow_plain_http && !region.fault_injection, "{name}");
        assert!(region.url_blocklist.is_some() && region.domain_assurance.is_some(), "{name}");
        assert!(region.ip_to_as_file.is_some() && region.backups.is_some(), "{name}");
        assert!(region.key_encryption_key_file.is_some() && !region.trusted_proxies.is_empty(), "{name}");
        assert!(region.admin_listen.ip().is_loopback(), "{name}: the admin API on loopback");
    }
}

// The forwarders of a deployment are trusted to name their callers, so a
// busy caller never shares a per-address rate with everyone behind them:
// on one host, loopback (where the door and regions listen); in compose,
// exactly the read regions' fixed addresses, at home.
#[test]
fn each_deployment_trusts_its_own_forwarders_and_no_one_else() {
    for region in regions() {
        let trusted: Vec<String> = region.trusted_proxies.iter().map(|c| c.to_string()).collect();
        assert_eq!(trusted, ["127.0.0.1"], "{}", region.region);
        assert!(region.listen.ip().is_loopback());
    }
    let compose =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/compose.yaml")).unwrap();
    let fixed: Vec<&str> =
        compose.lines().filter_map(|l| l.trim().strip_prefix("ipv4_address: ")).map(str::trim).collect();
    assert_eq!(fixed.len(), 2, "eu and ap have fixed addresses");
    let home = folder("deploy/compose").into_iter().find(|r| r.role == Role::Home).unwrap();
    let trusted: Vec<String> = home.trusted_proxies.iter().map(|c| c.to_string()).collect();
    assert_eq!(trusted, fixed);
}

#[test]
fn the_localhost_front_door_routes_to_every_region_at_its_public_port() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regions/front-door.toml");
    let door: FrontDoorConfig = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let regions = regions();
    assert_eq!(door.regions.len(), regions.len());
    for region in &regions {
        let route = door.regions.iter().find(|r| r.region == region.region).expect("every region has a route");
        assert_eq!(route.url, format!("http://{}", region.listen));
        assert_ne!(door.listen, region.listen);
    }
}

#[test]
fn a_broken_deployment_is_refused_with_the_region_named() {
    let regions = regions();
    let read = regions.iter().position(|r| r.role == Role::Read).unwrap();
    let mut other_authority = regions.clone();
    other_authority[read].public_authority = "api.elsewhere.example".into();
    assert!(check_deployment(&other_authority, Hosts::One).unwrap_err().to_string().contains("public_authority"));
    let mut wrong_token = regions.clone();
    wrong_token[read].replication.as_mut().unwrap().token = "guess".into();
    assert!(check_deployment(&wrong_token, Hosts::One).unwrap_err().to_string().contains("token"));
    let mut no_home = regions.clone();
    no_home.retain(|r| r.role == Role::Read);
    assert!(check_deployment(&no_home, Hosts::One).unwrap_err().to_string().contains("0 home"));
    let mut same_port = regions.clone();
    same_port[read].listen = regions.iter().find(|r| r.role == Role::Home).unwrap().listen;
    assert!(check_deployment(&same_port, Hosts::One).unwrap_err().to_string().contains("listen"));
    let mut astray = regions.clone();
    astray[read].replication.as_mut().unwrap().home_url = Some("http://127.0.0.1:1".into());
    assert!(check_deployment(&astray, Hosts::One).unwrap_err().to_string().contains("home_url"));
    // A region's own traffic goes to home's internal listener, not its public port.
    let mut public_only = regions.clone();
    let home_public = format!("http://{}", regions.iter().find(|r| r.role == Role::Home).unwrap().listen);
    public_only[read].replication.as_mut().unwrap().internal_url = Some(home_public);
    assert!(check_deployment(&public_only, Hosts::One).unwrap_err().to_string().contains("internal_url"));
    // A region home does not name, or another region's token, is refused.
    let mut unknown = regions.clone();
    unknown[read].region = "sa".into();
    assert!(check_deployment(&unknown, Hosts::One).unwrap_err().to_string().contains("does not name"));
    let mut borrowed = regions.clone();
    let other = borrowed.iter().rposition(|r| r.role == Role::Read).unwrap();
    assert_ne!(other, read);
    let theirs = borrowed[other].replication.as_ref().unwrap().token_file.clone();
    borrowed[read].replication.as_mut().unwrap().token_file = theirs;
    assert!(check_deployment(&borrowed, Hosts::One).unwrap_err().to_string().contains("token"));
}

// Home names each region with a token of its own: one shared by two
// regions, or home presenting one itself, refuses to start.
#[test]
fn home_refuses_a_token_shared_between_regions_or_one_of_its_own() {
    let listen = "127.0.0.1:0".parse().unwrap();
    let mut home = NodeConfig::local_home("unused".into(), listen, listen);
    home.role = Role::Home;
    let token = "b".repeat(40);
    home.replication = Some(ReplicationConfig::home(vec![
        RegionCredential::new("eu", &token),
        RegionCredential::new("ap", &"c".repeat(40)),
    ]));
    home.check_secrets().unwrap();
    home.replication.as_mut().unwrap().regions[1].token = token.clone();
    assert!(home.check_secrets().unwrap_err().to_string().contains("ap"));
    home.replication.as_mut().unwrap().regions[1].token = "short".into();
    assert!(home.check_secrets().unwrap_err().to_string().contains("regions.ap.token"));
    home.replication.as_mut().unwrap().regions[1].token = "c".repeat(40);
    home.replication.as_mut().unwrap().token = "d".repeat(40);
    assert!(home.check_secrets().unwrap_err().to_string().contains("a token per read region"));
}

/// Every text file under `dir`, recursively.
fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn no_shipped_file_holds_a_secret_and_each_node_names_its_token_files() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for region in regions().into_iter().chain(folder("deploy/compose")) {
        assert!(region.admin_token.is_empty() && region.admin_token_file.is_some(), "{}", region.region);
        let link = region.replication.as_ref().unwrap();
        match region.role {
            Role::Read => assert!(link.token.is_empty() && link.token_file.is_some(), "{}", region.region),
            Role::Home => {
                assert!(!link.regions.is_empty());
                for known in &link.regions {
                    assert!(known.token.is_empty() && known.token_file.is_some(), "home: {}", known.name);
                }
            }
        }
    }
    let mut shipped = Vec::new();
    files_under(&root.join("regions"), &mut shipped);
    files_under(&root.join("deploy"), &mut shipped);
    for path in shipped {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let placeholder = text.lines().any(|l| l.contains("change-me") && !l.contains("placeholder"));
        assert!(!placeholder, "{} ships a change-me token", path.display());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_refuses_to_start_with_a_missing_short_or_placeholder_token() {
    let dir = tempfile::tempdir().unwrap();
    let listen = "127.0.0.1:0".parse().unwrap();
    for (token, why) in [
        ("", "no token is given"),
        ("0123456789abcdef", "shorter than 32 characters"),
        ("change-me-home-admin-token-of-some-length", "placeholder"),
    ] {
        let mut config = NodeConfig::local_home(dir.path().join("home"), listen, listen);
        config.admin_token = token.into();
        let refused = svc_node::region::start(config, std::sync::Arc::new(svc_clock::SystemClock)).await.err();
        let refused = refused.expect("refused").to_string();
        assert!(refused.contains("admin_token") && refused.contains(why), "{refused}");
    }

    // A token given as a file is read from the config file's folder.
    let secrets = dir.path().join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("admin"), "a".repeat(40) + "\n").unwrap();
    let mut config = NodeConfig::local_home(dir.path().join("home"), listen, listen);
    config.admin_token = String::new();
    config.admin_token_file = Some("secrets/admin".into());
    config.read_secret_files(dir.path()).unwrap();
    assert_eq!(config.admin_token, "a".repeat(40));
    config.check_secrets().unwrap();
    // Both inline and as a file is refused, not silently chosen between.
    config.admin_token_file = Some("secrets/admin".into());
    assert!(config.read_secret_files(dir.path()).unwrap_err().to_string().contains("both"));
}
