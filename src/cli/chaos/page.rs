//! The run's report as one self-contained HTML page (`report.html`): no
//! script, nothing loaded, so it opens anywhere with no network. A
//! timeline draws, second by second, the answers clients got (served,
//! refused, no answer) and shades each fault's window; then the verdict,
//! each invariant with its evidence, and the load figures. A second chart
//! draws each region's replication lag.

use std::fmt::Write;

use super::Report;
use super::load::Seen;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Per second of the run: answers served (2xx), refused (any other status),
/// and requests that got no answer.
fn buckets(seen: &[Seen], seconds: usize) -> Vec<[u32; 3]> {
    let mut out = vec![[0u32; 3]; seconds.max(1)];
    for s in seen {
        let i = ((s.at_ms / 1000) as usize).min(out.len() - 1);
        let kind = match s.status {
            200..=299 => 0,
            0 => 2,
            _ => 1,
        };
        out[i][kind] += 1;
    }
    out
}

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 50.0;
const BOTTOM: f64 = 30.0;
const COLOURS: [(&str, &str); 3] = [("served", "#2f7d32"), ("refused", "#c77700"), ("no answer", "#b00020")];
const REGION_COLOURS: [&str; 5] = ["#1f4e9e", "#8e24aa", "#00897b", "#6d4c41", "#546e7a"];

/// One line of a chart: its name, colour, and a value per second (none
/// where nothing was seen).
struct Series {
    name: String,
    colour: &'static str,
    values: Vec<Option<f64>>,
}

/// A chart over the run's seconds as inline SVG, each fault's window
/// shaded; `unit` labels the top of the axis.
fn chart(report: &Report, series: &[Series], seconds: usize, unit: &str, label: &str) -> String {
    let top = series.iter().flat_map(|s| s.values.iter().flatten()).copied().fold(1.0, f64::max);
    let (plot_w, plot_h) = (WIDTH - LEFT - 10.0, HEIGHT - BOTTOM - 10.0);
    let x = |second: f64| LEFT + second / seconds.max(1) as f64 * plot_w;
    let y = |value: f64| 10.0 + plot_h - value / top * plot_h;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"{label}\">"
    );
    for fault in &report.faults {
        let (from, to) = (fault.started_ms as f64 / 1000.0, (fault.healed_ms as f64 / 1000.0).min(seconds as f64));
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"10\" width=\"{:.1}\" height=\"{plot_h:.1}\" fill=\"#9e9e9e\" fill-opacity=\"0.25\"/>\
             <text x=\"{:.1}\" y=\"24\" font-size=\"12\">{} {}</text>",
            x(from),
            (x(to) - x(from)).max(1.0),
            x(from) + 3.0,
            escape(fault.kind.name()),
            escape(&fault.target)
        );
    }
    for line in series {
        // A gap where nothing was seen breaks the line.
        let mut runs: Vec<Vec<String>> = vec![Vec::new()];
        for (i, value) in line.values.iter().enumerate() {
            match (value, runs.last_mut()) {
                (Some(v), Some(run)) => run.push(format!("{:.1},{:.1}", x(i as f64 + 0.5), y(*v))),
                _ => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| !r.is_empty()) {
            let _ = write!(
                svg,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
                line.colour,
                run.join(" "),
                escape(&line.name)
            );
        }
    }
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/><line x1=\"{LEFT}\" y1=\"10\" x2=\"{LEFT}\" y2=\"{:.1}\" stroke=\"#333\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{top}{unit}</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">0</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{seconds} s</text>",
        10.0 + plot_h,
        LEFT + plot_w,
        10.0 + plot_h,
        10.0 + plot_h,
        LEFT - 4.0,
        18.0,
        LEFT - 4.0,
        10.0 + plot_h,
        LEFT + plot_w,
        HEIGHT - 8.0
    );
    svg.push_str("</svg>");
    svg
}

/// Answers per second by kind.
fn timeline(report: &Report, seen: &[Seen], seconds: usize) -> String {
    let counts = buckets(seen, seconds);
    let series: Vec<Series> = COLOURS
        .iter()
        .enumerate()
        .map(|(kind, (name, colour))| Series {
            name: (*name).to_owned(),
            colour,
            values: counts.iter().map(|c| Some(f64::from(c[kind]))).collect(),
        })
        .collect();
    chart(report, &series, seconds, "/s", "timeline")
}

/// Each region's lag, in log leaves, behind the largest log served.
fn lag_chart(report: &Report, (regions, lag): (&[String], &[Vec<Option<u64>>]), seconds: usize) -> String {
    let series: Vec<Series> = regions
        .iter()
        .zip(lag)
        .enumerate()
        .map(|(i, (name, values))| Series {
            name: name.clone(),
            colour: REGION_COLOURS[i % REGION_COLOURS.len()],
            values: values.iter().map(|v| v.map(|v| v as f64)).collect(),
        })
        .collect();
    chart(report, &series, seconds, " leaves", "replication lag")
}

/// The whole page.
pub fn render(report: &Report, seen: &[Seen], lag: (&[String], &[Vec<Option<u64>>]), seconds: u64) -> String {
    let held = report.invariants.iter().all(|c| c.held);
    let mut rows = String::new();
    for checked in &report.invariants {
        let _ = write!(
            rows,
            "<tr><td class=\"{}\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
            if checked.held { "held" } else { "failed" },
            if checked.held { "held" } else { "FAILED" },
            escape(checked.name),
            escape(&checked.evidence.to_string())
        );
    }
    let mut faults = String::new();
    for fault in &report.faults {
        let _ = write!(
            faults,
            "<li>{} {}{} from {:.1} s to {:.1} s{}</li>",
            escape(fault.kind.name()),
            escape(&fault.target),
            fault.detail.as_deref().map(|d| format!(" ({})", escape(d))).unwrap_or_default(),
            fault.started_ms as f64 / 1000.0,
            fault.healed_ms as f64 / 1000.0,
            fault.error.as_deref().map(|e| format!(" (error: {})", escape(e))).unwrap_or_default()
        );
    }
    let legend: String =
        COLOURS.iter().map(|(name, colour)| format!("<span style=\"color:{colour}\">&#9632; {name}</span> ")).collect();
    let regions: String = lag
        .0
        .iter()
        .enumerate()
        .map(|(i, name)| {
            format!(
                "<span style=\"color:{}\">&#9632; {}</span> ",
                REGION_COLOURS[i % REGION_COLOURS.len()],
                escape(name)
            )
        })
        .collect();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>chaos: {name}</title>\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <style>body{{font-family:sans-serif;margin:2em;max-width:960px}}td{{padding:4px 8px;vertical-align:top}}\
         .held{{color:#2f7d32;font-weight:bold}}.failed{{color:#b00020;font-weight:bold}}code{{font-size:12px;word-break:break-all}}\
         .verdict{{font-size:1.3em}}</style></head><body>\
         <h1>Chaos run: {name}</h1>\
         <p class=\"verdict\">Verdict: <span class=\"{class}\">{verdict:?}</span> (expected {expect:?}); seed {seed}</p>\
         <h2>Timeline</h2><p>Answers clients got, per second; grey bands are faults. {legend}</p>{timeline}\
         <h2>Replication lag</h2><p>Each region's transparency log, in leaves behind the largest any region served \
         that second; a gap is a second the region did not answer. {regions}</p>{lag}\
         <h2>Faults</h2><ul>{faults}</ul>\
         <h2>Invariants</h2><table>{rows}</table>\
         <h2>Load</h2><p><code>{load}</code></p></body></html>",
        name = escape(&report.scenario),
        class = if held { "held" } else { "failed" },
        verdict = report.verdict,
        expect = report.expect,
        seed = report.seed,
        timeline = timeline(report, seen, seconds.max(1) as usize),
        lag = lag_chart(report, lag, seconds.max(1) as usize),
        load = escape(&report.load.to_string()),
    )
}
