//! A chaos scenario, as an SRE writes it in `chaos/scenarios/*.toml`: the
//! deployment, the load, and a timeline of faults. A file that does not
//! hold is refused with its line and the reason.

use serde::Deserialize;
use toml::Spanned;

use svc_node::faults::CrashPoint;

/// Why a scenario file is refused: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every invariant holds.
    Pass,
    /// At least one invariant is expected to fail (a deliberately broken build).
    Fail,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Seeds the load's choices, so a run can be replayed.
    #[serde(default = "one")]
    pub seed: u64,
    /// How long the load runs, in seconds.
    pub duration_s: Spanned<u64>,
    #[serde(default = "pass")]
    pub expect: Verdict,
    pub deployment: Deployment,
    pub load: Load,
    #[serde(default, rename = "fault")]
    pub faults: Vec<Fault>,
    /// Faults drawn from `seed`, added to the timeline when the file is read.
    #[serde(default)]
    pub random_faults: Option<RandomFaults>,
}

/// A schedule of faults drawn from the scenario's seed: the same seed
/// draws the same schedule, so a run that found something replays.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFaults {
    /// How many faults (1 to 50).
    pub count: Spanned<u32>,
    /// The kinds to draw from.
    pub kinds: Spanned<Vec<FaultKind>>,
    /// The nodes to strike; every node of the deployment when absent.
    #[serde(default)]
    pub targets: Option<Spanned<Vec<String>>>,
    /// The shortest and longest a fault lasts, in seconds.
    #[serde(default = "default_for_s")]
    pub for_s: Spanned<[u64; 2]>,
}

fn default_for_s() -> Spanned<[u64; 2]> {
    Spanned::new(0..0, [2, 6])
}

fn one() -> u64 {
    1
}

fn one_business() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

fn zero() -> Spanned<u32> {
    Spanned::new(0..0, 0)
}

fn pass() -> Verdict {
    Verdict::Pass
}

/// Home and its read regions, each a `svc node` process of its own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// The read regions, by name (`home` is always there).
    pub regions: Spanned<Vec<String>>,
    /// What the nodes talk over when a fault cuts the network: `auto`
    /// (namespaces where the runner may make them, else loopback),
    /// `namespaces` or `loopback`.
    #[serde(default)]
    pub network: super::network::NetworkKind,
    /// Home's nodes: 1, or a Raft group of 3 or 5 (`home-1`, `home-2`, …),
    /// reached by the run's clients through a door of their own. A fault
    /// on `home` strikes whichever member leads when it starts, one on
    /// `home-follower` a member that does not lead, one on `home-2` that
    /// member.
    #[serde(default = "one_home")]
    pub home_nodes: Spanned<u8>,
}

fn one_home() -> Spanned<u8> {
    Spanned::new(0..0, 1)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// AI companies, each with one retrieval key.
    pub ai_keys: Spanned<u32>,
    /// Signed searches a second, over every region in turn.
    pub searches_per_second: Spanned<u32>,
    /// Signed fetches a second of the products published before the load,
    /// over every region in turn.
    #[serde(default = "zero")]
    pub fetches_per_second: Spanned<u32>,
    /// Sealed pushes a second at home from the business: a new product
    /// each, every fourth a withdrawal of one accepted earlier.
    #[serde(default = "zero")]
    pub pushes_per_second: Spanned<u32>,
    /// Answers re-sent on purpose, with their nonce, to another region.
    #[serde(default)]
    pub replays_per_second: u32,
    /// Ad pools a second over every region in turn, each followed by the
    /// render of its first ad there, spending a campaign of the first
    /// business funded for half the renders the load asks.
    #[serde(default = "zero")]
    pub ads_per_second: Spanned<u32>,
    /// Businesses pushing at home, each at `pushes_per_second` with its
    /// own keys and brand (1 to 4; the first owns the products fetched).
    #[serde(default = "one_business")]
    pub businesses: Spanned<u32>,
    /// Bulk files the business imports at home during the load.
    #[serde(default)]
    pub bulk: Vec<BulkImport>,
    /// When the business blocks the first AI key's group (seconds after
    /// the load starts); from then on no region may serve that group its
    /// records once converged.
    #[serde(default)]
    pub block_at_s: Option<Spanned<u64>>,
    /// When the operator withdraws the last business's certificate (the
    /// first's when it is alone); from then on no region may serve any of
    /// its records once converged.
    #[serde(default)]
    pub withdraw_certificate_at_s: Option<Spanned<u64>>,
}

/// One bulk import: `records` new products at `at_s`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkImport {
    pub at_s: Spanned<u64>,
    pub records: Spanned<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// SIGKILL, then a restart from the same data directory after `for_s`.
    Kill,
    /// SIGSTOP, then SIGCONT after `for_s`: a stalled process that keeps its sockets.
    Stop,
    /// The target aborts the next time its write path passes `step`, and
    /// is restarted `for_s` after.
    Crash,
    /// The target's clock runs `skew_s` from the machine's for `for_s`.
    Clock,
    /// The network between the target and `peer` (home by default) drops
    /// everything for `for_s`.
    Partition,
    /// The target's data directory (a small tmpfs of its own) is filled
    /// for `for_s`, then the filler is deleted.
    DiskFull,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Stop => "stop",
            FaultKind::Crash => "crash",
            FaultKind::Clock => "clock",
            FaultKind::Partition => "partition",
            FaultKind::DiskFull => "disk-full",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Seconds after the load starts.
    pub at_s: Spanned<u64>,
    pub kind: Spanned<FaultKind>,
    /// `home` or a read region.
    pub target: Spanned<String>,
    /// How long the fault lasts.
    pub for_s: Spanned<u64>,
    /// `crash`: the step of the write path where the target aborts.
    #[serde(default)]
    pub step: Option<Spanned<CrashPoint>>,
    /// `clock`: seconds the target's clock runs ahead (negative: behind).
    #[serde(default)]
    pub skew_s: Option<Spanned<i64>>,
    /// `partition`: the other side of the cut; home when absent (with
    /// home as a group and `target = "home"`: the other members).
    #[serde(default)]
    pub peer: Option<Spanned<String>>,
}

impl Fault {
    pub fn kind(&self) -> FaultKind {
        *self.kind.get_ref()
    }

    /// What the kind alone does not say, for the report.
    pub fn detail(&self) -> Option<String> {
        match self.kind() {
            FaultKind::Crash => self.step.as_ref().map(|s| format!("at {}", s.get_ref().name())),
            FaultKind::Clock => self.skew_s.as_ref().map(|s| format!("{:+} s", s.get_ref())),
            FaultKind::Partition => Some(format!("from {}", self.peer())),
            _ => None,
        }
    }

    /// The other side of a partition.
    pub fn peer(&self) -> &str {
        self.peer.as_ref().map_or("home", |p| p.get_ref())
    }
}

/// The line (from 1) of a byte offset in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

impl Fault {
    /// What each kind needs, and nothing a kind does not use: the offset
    /// and reason of the first mismatch.
    fn check_kind(&self, regions: &[String], group: bool) -> Result<(), (usize, String)> {
        let kind = self.kind();
        let at = self.kind.span().start;
        let needs = |present: bool, wanted: bool, field: &str| match (present, wanted) {
            (false, true) => Err((at, format!("a {} fault needs {field}", kind.name()))),
            (true, false) => Err((at, format!("{field} belongs to another kind than {}", kind.name()))),
            _ => Ok(()),
        };
        needs(self.step.is_some(), kind == FaultKind::Crash, "step")?;
        needs(self.skew_s.is_some(), kind == FaultKind::Clock, "skew_s")?;
        if self.peer.is_some() && kind != FaultKind::Partition {
            return Err((at, format!("peer belongs to another kind than {}", kind.name())));
        }
        if let Some(skew) = &self.skew_s
            && (*skew.get_ref() == 0 || skew.get_ref().abs() > 86_400)
        {
            return Err((skew.span().start, "skew_s is -86400 to 86400, not 0".into()));
        }
        if let Some(peer) = &self.peer {
            let name = peer.get_ref();
            if name != "home" && !regions.contains(name) {
                return Err((peer.span().start, format!("peer {name:?} is not home or a region of the deployment")));
            }
            if name == self.target.get_ref() {
                return Err((peer.span().start, "a partition cuts two different nodes apart".into()));
            }
        }
        if kind == FaultKind::Partition && self.peer.is_none() && self.target.get_ref() == "home" && !group {
            return Err((self.target.span().start, "a partition from home names a read region as its peer".into()));
        }
        Ok(())
    }
}

impl RandomFaults {
    /// The schedule `seed` draws: `count` faults at seconds spread over the
    /// run (leaving its last 2 s quiet), each of a kind, target and length
    /// drawn from what the file allows, with what its kind needs.
    fn draw(&self, seed: u64, duration: u64, regions: &[String]) -> Result<Vec<Fault>, (usize, String)> {
        let count = *self.count.get_ref();
        if !(1..=50).contains(&count) {
            return Err((self.count.span().start, "random_faults.count is 1 to 50".into()));
        }
        if self.kinds.get_ref().is_empty() {
            return Err((self.kinds.span().start, "random_faults.kinds names at least one kind".into()));
        }
        let [shortest, longest] = *self.for_s.get_ref();
        if shortest == 0 || shortest > longest || longest > 600 {
            return Err((self.for_s.span().start, "random_faults.for_s is [shortest, longest], 1 to 600".into()));
        }
        let every: Vec<String> = std::iter::once("home".to_owned()).chain(regions.iter().cloned()).collect();
        let targets = self.targets.as_ref().map_or(every.clone(), |t| t.get_ref().clone());
        let span = self.targets.as_ref().map_or(self.count.span(), |t| t.span());
        if targets.is_empty() || targets.iter().any(|t| !every.contains(t)) {
            return Err((span.start, "random_faults.targets names home or regions of the deployment".into()));
        }
        if duration < 5 {
            return Err((self.count.span().start, "the run is too short for random faults".into()));
        }
        let mut rng = svc_core::rng::Rng::new(seed);
        let mut faults = Vec::new();
        for _ in 0..count {
            let kind = *rng.pick(self.kinds.get_ref());
            let target = rng.pick(&targets).clone();
            let at_s = 1 + rng.below(duration - 3);
            let for_s = shortest + rng.below(longest - shortest + 1);
            let mut fault = Fault {
                at_s: Spanned::new(0..0, at_s),
                kind: Spanned::new(0..0, kind),
                target: Spanned::new(0..0, target.clone()),
                for_s: Spanned::new(0..0, for_s),
                step: None,
                skew_s: None,
                peer: None,
            };
            match kind {
                FaultKind::Crash => {
                    let steps: Vec<CrashPoint> = CrashPoint::ALL
                        .into_iter()
                        .filter(|p| p.runs_at_home() == (target == "home") || *p == CrashPoint::IndexApplied)
                        .collect();
                    fault.step = Some(Spanned::new(0..0, *rng.pick(&steps)));
                }
                FaultKind::Clock => {
                    let skew = 30 + rng.below(271) as i64;
                    fault.skew_s = Some(Spanned::new(0..0, if rng.chance(50) { skew } else { -skew }));
                }
                FaultKind::Partition => {
                    let peers: Vec<&String> = every.iter().filter(|n| **n != target).collect();
                    fault.peer = Some(Spanned::new(0..0, (*rng.pick(&peers)).clone()));
                }
                _ => {}
            }
            faults.push(fault);
        }
        Ok(faults)
    }
}

impl Scenario {
    /// Whether this scenario can run on `target`, an operator's deployment:
    /// the same regions, home's nodes as many, no fault that needs a
    /// process the runner started, and each fault's commands given.
    pub fn fits(&self, target: &super::target::TargetFile) -> Result<(), super::target::Unfit> {
        use super::target::Unfit;
        let mut wanted: Vec<String> = self.regions().to_vec();
        let mut have: Vec<String> = target.regions().into_iter().map(str::to_owned).collect();
        wanted.sort();
        have.sort();
        if wanted != have {
            return Err(Unfit::Regions { wanted, have });
        }
        let (scenario, deployment) = (usize::from(*self.deployment.home_nodes.get_ref()), target.members().max(1));
        if scenario != deployment {
            return Err(Unfit::HomeSize { scenario, deployment });
        }
        for fault in &self.faults {
            let needs: &[(&'static str, super::target::Pick)] = match fault.kind() {
                FaultKind::Kill => &[("kill", |c| &c.kill), ("start", |c| &c.start)],
                FaultKind::Stop => &[("pause", |c| &c.pause), ("resume", |c| &c.resume)],
                FaultKind::Partition => &[("partition", |c| &c.partition), ("heal", |c| &c.heal)],
                FaultKind::Clock => &[],
                // A crash is seen as the runner's own process ending; a full
                // disk is a small disk the runner mounts.
                kind @ (FaultKind::Crash | FaultKind::DiskFull) => return Err(Unfit::NeedsOwnProcess(kind.name())),
            };
            // `home` in a group is whichever member leads when it strikes.
            let aimed = fault.target.get_ref().as_str();
            let struck: Vec<&super::target::TargetNode> = match (aimed, target.members()) {
                ("home" | "home-follower", 1..) => {
                    target.nodes.iter().filter(|n| n.name.starts_with("home-")).collect()
                }
                _ => target.nodes.iter().filter(|n| n.name == aimed).collect(),
            };
            for node in struck {
                if let Some((command, _)) = needs.iter().find(|(_, pick)| pick(&node.commands).is_none()) {
                    let (kind, aimed, node) = (fault.kind().name(), aimed.to_owned(), node.name.clone());
                    return Err(Unfit::NoCommand { kind, aimed, command, node });
                }
            }
        }
        Ok(())
    }

    /// Parses and checks a scenario; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let refuse = |offset: usize, reason: String| ScenarioError {
            file: file.to_owned(),
            line: line_of(text, offset),
            reason,
        };
        let mut scenario: Scenario = toml::from_str(text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            refuse(offset, e.message().to_owned())
        })?;
        let duration = *scenario.duration_s.get_ref();
        if !(5..=3_600).contains(&duration) {
            return Err(refuse(scenario.duration_s.span().start, "duration_s is 5 to 3600".into()));
        }
        let regions = scenario.deployment.regions.get_ref();
        let at = scenario.deployment.regions.span().start;
        if regions.is_empty() || regions.len() > 4 {
            return Err(refuse(at, "deployment.regions names 1 to 4 read regions".into()));
        }
        for (i, name) in regions.iter().enumerate() {
            let valid = !name.is_empty()
                && name.len() <= 16
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            if !valid || name == "home" {
                return Err(refuse(at, format!("region {name:?}: 1 to 16 lower-case letters or digits, not \"home\"")));
            }
            if regions[..i].contains(name) {
                return Err(refuse(at, format!("region {name:?} is named twice")));
            }
        }
        let keys = *scenario.load.ai_keys.get_ref();
        if !(1..=16).contains(&keys) {
            return Err(refuse(scenario.load.ai_keys.span().start, "load.ai_keys is 1 to 16".into()));
        }
        let rate = *scenario.load.searches_per_second.get_ref();
        if !(1..=2_000).contains(&rate) {
            return Err(refuse(
                scenario.load.searches_per_second.span().start,
                "load.searches_per_second is 1 to 2000".into(),
            ));
        }
        let fetches = &scenario.load.fetches_per_second;
        if *fetches.get_ref() > 2_000 {
            return Err(refuse(fetches.span().start, "load.fetches_per_second is 0 to 2000".into()));
        }
        let ads = &scenario.load.ads_per_second;
        if *ads.get_ref() > 50 {
            return Err(refuse(ads.span().start, "load.ads_per_second is 0 to 50".into()));
        }
        let businesses = &scenario.load.businesses;
        if !(1..=4).contains(businesses.get_ref()) {
            return Err(refuse(businesses.span().start, "load.businesses is 1 to 4".into()));
        }
        let pushes = &scenario.load.pushes_per_second;
        if *pushes.get_ref() > 20 {
            return Err(refuse(pushes.span().start, "load.pushes_per_second is 0 to 20".into()));
        }
        for (name, at) in [
            ("block_at_s", &scenario.load.block_at_s),
            ("withdraw_certificate_at_s", &scenario.load.withdraw_certificate_at_s),
        ] {
            if let Some(at) = at
                && *at.get_ref() >= duration
            {
                return Err(refuse(at.span().start, format!("{name} must fall within duration_s ({duration})")));
            }
        }
        for import in &scenario.load.bulk {
            if *import.at_s.get_ref() >= duration {
                return Err(refuse(import.at_s.span().start, format!("at_s must fall within duration_s ({duration})")));
            }
            if !(1..=20_000).contains(import.records.get_ref()) {
                return Err(refuse(import.records.span().start, "a bulk import holds 1 to 20000 records".into()));
            }
        }
        if let Some(random) = &scenario.random_faults {
            let drawn =
                random.draw(scenario.seed, duration, regions).map_err(|(offset, reason)| refuse(offset, reason))?;
            scenario.faults.extend(drawn);
        }
        let home_nodes = *scenario.deployment.home_nodes.get_ref();
        if ![1, 3, 5].contains(&home_nodes) {
            return Err(refuse(
                scenario.deployment.home_nodes.span().start,
                "deployment.home_nodes is 1, 3 or 5".into(),
            ));
        }
        // Loopback's proxies stand only between home and its regions; a
        // group's members are cut apart in namespaces of their own.
        let namespaces = scenario.deployment.network == super::network::NetworkKind::Namespaces;
        if home_nodes > 1 && scenario.deployment.network == super::network::NetworkKind::Loopback {
            return Err(refuse(
                scenario.deployment.home_nodes.span().start,
                "home's group runs on plain loopback or in namespaces, not behind loopback's proxies".into(),
            ));
        }
        let members = scenario.deployment.members();
        for fault in &scenario.faults {
            let target = fault.target.get_ref();
            let follower = target == "home-follower" && !members.is_empty();
            if target != "home" && !regions.contains(target) && !members.contains(target) && !follower {
                return Err(refuse(
                    fault.target.span().start,
                    format!("target {target:?} is not home or a region of the deployment"),
                ));
            }
            if home_nodes > 1 && fault.kind() == FaultKind::Partition && !namespaces {
                return Err(refuse(
                    fault.kind.span().start,
                    "a partition beside home's group needs deployment.network = \"namespaces\"".into(),
                ));
            }
            let at_home = target == "home" || members.contains(target) || follower;
            let built = matches!(fault.kind(), FaultKind::Kill | FaultKind::Stop | FaultKind::Partition);
            if home_nodes > 1 && at_home && !built {
                return Err(refuse(
                    fault.kind.span().start,
                    format!(
                        "a {} fault on home's group is not built yet (kill, stop and partition are)",
                        fault.kind().name()
                    ),
                ));
            }
            if *fault.at_s.get_ref() >= duration {
                return Err(refuse(fault.at_s.span().start, format!("at_s must fall within duration_s ({duration})")));
            }
            if !(1..=600).contains(fault.for_s.get_ref()) {
                return Err(refuse(fault.for_s.span().start, "for_s is 1 to 600".into()));
            }
            fault.check_kind(regions, home_nodes > 1).map_err(|(offset, reason)| refuse(offset, reason))?;
        }
        Ok(scenario)
    }

    pub fn duration(&self) -> u64 {
        *self.duration_s.get_ref()
    }

    /// The renders the ads campaign is funded for: half of those the load
    /// asks, so its money runs out mid-load.
    pub fn ad_budget_renders(&self) -> u32 {
        let asked = u64::from(*self.load.ads_per_second.get_ref()) * self.duration();
        (asked / 2).max(1) as u32
    }

    /// The deployment the run needs: a network a partition can cut when a
    /// fault partitions or the file names one (plain loopback otherwise),
    /// and a small disk for each node a fault fills.
    pub fn plan(&self) -> super::deploy::Plan<'_> {
        let kind = self.deployment.network;
        let cuts = self.faults.iter().any(|f| f.kind() == FaultKind::Partition);
        let mut small_disks: Vec<String> = self
            .faults
            .iter()
            .filter(|f| f.kind() == FaultKind::DiskFull)
            .map(|f| f.target.get_ref().clone())
            .collect();
        small_disks.sort();
        small_disks.dedup();
        super::deploy::Plan {
            regions: self.regions(),
            network: (cuts || kind != super::network::NetworkKind::Auto).then_some(kind),
            small_disks,
            home_nodes: *self.deployment.home_nodes.get_ref(),
        }
    }

    pub fn regions(&self) -> &[String] {
        self.deployment.regions.get_ref()
    }
}

impl Deployment {
    /// The members of home's group by name (`home-1`, …); none when home
    /// is one node.
    pub fn members(&self) -> Vec<String> {
        match *self.home_nodes.get_ref() {
            1 => Vec::new(),
            n => (1..=n).map(|id| format!("home-{id}")).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOKE: &str = r#"name = "smoke"
duration_s = 20

[deployment]
regions = ["eu", "ap"]

[load]
ai_keys = 2
searches_per_second = 20

[[fault]]
at_s = 5
kind = "kill"
target = "eu"
for_s = 3
"#;

    #[test]
    fn a_scenario_reads_with_its_defaults() {
        let scenario = Scenario::parse("smoke.toml", SMOKE).unwrap();
        assert_eq!((scenario.seed, scenario.expect, scenario.duration()), (1, Verdict::Pass, 20));
        assert_eq!(scenario.regions(), ["eu", "ap"]);
        assert_eq!(scenario.faults[0].kind(), FaultKind::Kill);
        let load = &scenario.load;
        assert_eq!((*load.fetches_per_second.get_ref(), *load.pushes_per_second.get_ref()), (0, 0));
        assert_eq!((*load.ads_per_second.get_ref(), scenario.ad_budget_renders()), (0, 1));
        let with_ads = SMOKE.replace("searches_per_second = 20", "searches_per_second = 20\nads_per_second = 4");
        let scenario = Scenario::parse("ads.toml", &with_ads).unwrap();
        assert_eq!(scenario.ad_budget_renders(), 40, "half of 4 a second for 20 s");
    }

    // Home as a group: its members are targets by name, `home` is the
    // leader and `home-follower` one that does not lead; what is not built
    // for a group is refused with its reason.
    #[test]
    fn a_scenario_with_home_s_group_names_its_members_and_refuses_what_is_not_built() {
        let group = SMOKE.replace("regions = [\"eu\", \"ap\"]", "regions = [\"eu\", \"ap\"]\nhome_nodes = 3");
        let scenario = Scenario::parse("group.toml", &group).unwrap();
        assert_eq!(scenario.deployment.members(), ["home-1", "home-2", "home-3"]);
        assert_eq!(scenario.plan().home_nodes, 3);
        for target in ["home", "home-2", "home-follower"] {
            let text = group.replace("target = \"eu\"", &format!("target = \"{target}\""));
            assert!(Scenario::parse("group.toml", &text).is_ok(), "{target}");
        }
        let refused = |text: String| Scenario::parse("group.toml", &text).unwrap_err().reason;
        assert!(refused(group.replace("home_nodes = 3", "home_nodes = 2")).contains("1, 3 or 5"));
        assert!(refused(group.replace("target = \"eu\"", "target = \"home-4\"")).contains("not home or a region"));
        assert!(
            refused(SMOKE.replace("target = \"eu\"", "target = \"home-follower\"")).contains("not home or a region")
        );
        let crash =
            group.replace("kind = \"kill\"\ntarget = \"eu\"", "kind = \"clock\"\nskew_s = 30\ntarget = \"home\"");
        assert!(refused(crash).contains("not built yet"));
        // A partition of the group needs namespaces; the leader cut from
        // the other members is `target = "home"` with no peer.
        let cut = group.replace("kind = \"kill\"\ntarget = \"eu\"", "kind = \"partition\"\ntarget = \"home\"");
        assert!(refused(cut.clone()).contains("partition beside home's group needs"));
        let netns = cut.replace("home_nodes = 3", "home_nodes = 3\nnetwork = \"namespaces\"");
        assert!(Scenario::parse("group.toml", &netns).is_ok());
        let proxied = group.replace("home_nodes = 3", "home_nodes = 3\nnetwork = \"loopback\"");
        assert!(refused(proxied).contains("not behind loopback's proxies"));
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line_and_the_reason() {
        let refused = |text: String| Scenario::parse("bad.toml", &text).unwrap_err();
        let e = refused(SMOKE.replace("target = \"eu\"", "target = \"mars\""));
        assert_eq!(e.line, 14, "{e}");
        assert!(e.reason.contains("\"mars\" is not home or a region"), "{e}");
        let e = refused(SMOKE.replace("kind = \"kill\"", "kind = \"flood\""));
        assert_eq!(e.line, 13, "{e}");
        assert!(e.reason.contains("unknown variant"), "{e}");
        let e = refused(SMOKE.replace("at_s = 5", "at_s = 25"));
        assert_eq!((e.line, e.reason.contains("within duration_s")), (12, true), "{e}");
        let e = refused(SMOKE.replace("ai_keys = 2", "ai_keys = 2\nsurprise = 1"));
        assert_eq!(e.line, 9, "{e}");
        assert!(e.reason.contains("unknown field"), "{e}");
        let e = refused(SMOKE.replace("[\"eu\", \"ap\"]", "[\"eu\", \"eu\"]"));
        assert_eq!((e.line, e.reason.contains("named twice")), (5, true), "{e}");
        let e = refused(SMOKE.replace("duration_s = 20", "duration_s = 2"));
        assert_eq!(e.line, 2, "{e}");
        assert_eq!(e.to_string(), format!("bad.toml:2: {}", e.reason));
        let e = refused(SMOKE.replace("searches_per_second = 20", "searches_per_second = 20\npushes_per_second = 50"));
        assert_eq!((e.line, e.reason.contains("pushes_per_second is 0 to 20")), (10, true), "{e}");
        let e = refused(SMOKE.replace("searches_per_second = 20", "searches_per_second = 20\nads_per_second = 51"));
        assert_eq!((e.line, e.reason.contains("ads_per_second is 0 to 50")), (10, true), "{e}");
        let e = refused("name = \"x\"\nduration_s = [".into());
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn each_fault_kind_takes_what_it_needs_and_nothing_else() {
        let with = |kind: &str, extra: &str| SMOKE.replace("kind = \"kill\"", &format!("kind = \"{kind}\"\n{extra}"));
        let crash = Scenario::parse("ok.toml", &with("crash", "step = \"chunk-written\"")).unwrap();
        assert_eq!(*crash.faults[0].step.as_ref().unwrap().get_ref(), svc_node::faults::CrashPoint::ChunkWritten);
        let cut = Scenario::parse("ok.toml", &with("partition", "peer = \"ap\"")).unwrap();
        assert_eq!((cut.faults[0].kind(), cut.faults[0].peer()), (FaultKind::Partition, "ap"));
        let cut = Scenario::parse("ok.toml", &with("partition", "")).unwrap();
        assert_eq!(cut.faults[0].peer(), "home");
        Scenario::parse("ok.toml", &with("clock", "skew_s = -90")).unwrap();
        Scenario::parse("ok.toml", &with("disk-full", "")).unwrap();

        let refused = |text: String| Scenario::parse("bad.toml", &text).unwrap_err();
        let e = refused(with("crash", ""));
        assert_eq!((e.line, e.reason.as_str()), (13, "a crash fault needs step"), "{e}");
        let e = refused(with("crash", "step = \"halfway\""));
        assert!(e.reason.contains("unknown variant"), "{e}");
        let e = refused(with("kill", "skew_s = 30"));
        assert_eq!(e.reason, "skew_s belongs to another kind than kill", "{e}");
        let e = refused(with("clock", "skew_s = 0"));
        assert_eq!((e.line, e.reason.contains("not 0")), (14, true), "{e}");
        let e = refused(with("partition", "peer = \"eu\""));
        assert_eq!(e.reason, "a partition cuts two different nodes apart", "{e}");
        let e = refused(with("partition", "peer = \"mars\""));
        assert!(e.reason.contains("\"mars\" is not home or a region"), "{e}");
        let e = refused(with("stop", "peer = \"ap\""));
        assert_eq!(e.reason, "peer belongs to another kind than stop", "{e}");
    }

    #[test]
    fn random_faults_are_drawn_from_the_seed_and_hold_like_written_ones() {
        let random =
            "\n[random_faults]\ncount = 12\nkinds = [\"kill\", \"crash\", \"clock\", \"partition\", \"disk-full\"]\n";
        let text = |seed: u64| SMOKE.replace("name = \"smoke\"", &format!("name = \"r\"\nseed = {seed}")) + random;
        let schedule = |seed: u64| {
            let scenario = Scenario::parse("r.toml", &text(seed)).unwrap();
            assert_eq!(scenario.faults.len(), 13, "the written fault and twelve drawn");
            scenario
                .faults
                .iter()
                .map(|f| {
                    format!(
                        "{} {} {} {} {:?}",
                        f.at_s.get_ref(),
                        f.kind().name(),
                        f.target.get_ref(),
                        f.for_s.get_ref(),
                        f.detail()
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(schedule(7), schedule(7), "one seed, one schedule");
        assert_ne!(schedule(7), schedule(8));
        let scenario = Scenario::parse("r.toml", &text(7)).unwrap();
        for fault in &scenario.faults {
            assert!(
                *fault.at_s.get_ref() < 20 && (2..=6).contains(fault.for_s.get_ref())
                    || fault.kind() == FaultKind::Kill
            );
            if let Some(step) = &fault.step {
                let at_home = fault.target.get_ref() == "home";
                assert!(step.get_ref().runs_at_home() == at_home || *step.get_ref() == CrashPoint::IndexApplied);
            }
        }
        let plan = scenario.plan();
        assert!(plan.network.is_some() || scenario.faults.iter().all(|f| f.kind() != FaultKind::Partition));

        let refused = |extra: &str| Scenario::parse("bad.toml", &(SMOKE.to_owned() + extra)).unwrap_err();
        let e = refused("\n[random_faults]\ncount = 0\nkinds = [\"kill\"]\n");
        assert_eq!((e.line, e.reason.as_str()), (18, "random_faults.count is 1 to 50"), "{e}");
        let e = refused("\n[random_faults]\ncount = 2\nkinds = [\"kill\"]\ntargets = [\"mars\"]\n");
        assert_eq!(e.line, 20, "{e}");
        let e = refused("\n[random_faults]\ncount = 2\nkinds = [\"kill\"]\nfor_s = [5, 2]\n");
        assert!(e.reason.contains("shortest, longest"), "{e}");
    }

    #[test]
    fn bulk_imports_and_a_block_fall_within_the_run() {
        let load =
            |extra: &str| SMOKE.replace("searches_per_second = 20\n", &format!("searches_per_second = 20\n{extra}"));
        let ok = Scenario::parse("ok.toml", &load("block_at_s = 9\n[[load.bulk]]\nat_s = 3\nrecords = 500\n")).unwrap();
        assert_eq!(*ok.load.bulk[0].records.get_ref(), 500);
        assert_eq!(ok.load.block_at_s.map(|b| *b.get_ref()), Some(9));
        let e = Scenario::parse("bad.toml", &load("[[load.bulk]]\nat_s = 3\nrecords = 0\n")).unwrap_err();
        assert_eq!((e.line, e.reason.as_str()), (12, "a bulk import holds 1 to 20000 records"), "{e}");
        let e = Scenario::parse("bad.toml", &load("block_at_s = 20\n")).unwrap_err();
        assert_eq!((e.line, e.reason.contains("within duration_s")), (10, true), "{e}");
        assert_eq!(*Scenario::parse("ok.toml", &load("businesses = 4\n")).unwrap().load.businesses.get_ref(), 4);
        let e = Scenario::parse("bad.toml", &load("businesses = 5\n")).unwrap_err();
        assert_eq!((e.line, e.reason.as_str()), (10, "load.businesses is 1 to 4"), "{e}");
    }
}
