//! Every file in `regions/` and `deploy/compose/` is a valid node
//! configuration, and each folder makes one deployment
//! (`config::check_deployment`): `regions/` on one host, `deploy/compose/`
//! one container per region.

use svc::config::{Hosts, NodeConfig, Role, check_deployment};
use svc::front_door::FrontDoorConfig;

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
    let mut astray = regions;
    astray[read].replication.as_mut().unwrap().home_url = Some("http://127.0.0.1:1".into());
    assert!(check_deployment(&astray, Hosts::One).unwrap_err().to_string().contains("home_url"));
}
