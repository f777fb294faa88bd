//! Turns of closed-loop load for the benches that put a surface beside the
//! raw route it wraps: each turn runs one request shape from a number of
//! connections for a while, and pairs of turns are compared by their medians.

use std::time::{Duration, Instant};

use svc::loadgen::summarize;

pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One turn's figures.
#[derive(Clone, Copy)]
pub struct Turn {
    pub rate: f64,
    pub p50: f64,
    pub p99: f64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

pub fn medians(turns: &[Turn]) -> Turn {
    Turn {
        rate: median(&mut turns.iter().map(|t| t.rate).collect::<Vec<_>>()),
        p50: median(&mut turns.iter().map(|t| t.p50).collect::<Vec<_>>()),
        p99: median(&mut turns.iter().map(|t| t.p99).collect::<Vec<_>>()),
    }
}

/// Runs `one` in a loop from `connections` tasks for `run`.
pub async fn turn<F, Fut>(connections: usize, run: Duration, make: impl Fn() -> F) -> Turn
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let mut one = make();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while started.elapsed() < run {
                let at = Instant::now();
                one().await;
                samples.push(at.elapsed());
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.unwrap());
    }
    let rate = samples.len() as f64 / started.elapsed().as_secs_f64();
    let latency = summarize(samples);
    Turn { rate, p50: latency.p50_ms, p99: latency.p99_ms }
}

/// The medians of the raw turns and the wrapped turns, and their ratios.
pub fn print_pair(title: &str, (raw_name, raw): (&str, &[Turn]), (wrapped_name, wrapped): (&str, &[Turn])) {
    let (raw, wrapped) = (medians(raw), medians(wrapped));
    println!(
        "{title}:\n  {raw_name}: {:.0}/s, p50 {:.2} ms, p99 {:.2} ms\n  {wrapped_name}: {:.0}/s, p50 {:.2} ms, p99 {:.2} ms\n  \
         ratio ({wrapped_name} / {raw_name}): throughput {:.2}x, p50 {:.2}x, p99 {:.2}x",
        raw.rate,
        raw.p50,
        raw.p99,
        wrapped.rate,
        wrapped.p50,
        wrapped.p99,
        wrapped.rate / raw.rate,
        wrapped.p50 / raw.p50,
        wrapped.p99 / raw.p99
    );
}
