//! Charts a person reads at a glance, drawn on the server as SVG (no
//! script, nothing loaded): searches and fetches per day, and per asking
//! AI group.

use std::fmt::Write;

use crate::api::pages::escape;

const SEARCH: &str = "#1f5fbf";
const FETCH: &str = "#12a150";

/// Stacked bars of `(date, searches, fetches)`, one a day, oldest first.
pub fn daily_bars(days: &[(String, u64, u64)]) -> String {
    let (width, height, left, bottom, top) = (720.0, 240.0, 44.0, 28.0, 24.0);
    let plot = height - bottom - top;
    let most = days.iter().map(|(_, s, f)| s + f).max().unwrap_or(0).max(1);
    let step = (width - left - 20.0) / days.len().max(1) as f64;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" class="chart daily" aria-label="Searches and fetches per day">"#
    );
    legend(&mut svg, left, 14.0);
    let _ = write!(
        svg,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="#9aa3b2"/><text x="{}" y="{}" font-size="11" text-anchor="end" fill="#5b6475">{most}</text><text x="{}" y="{}" font-size="11" text-anchor="end" fill="#5b6475">0</text>"##,
        height - bottom,
        left - 4.0,
        top + 4.0,
        left - 4.0,
        height - bottom
    );
    for (i, (date, searches, fetches)) in days.iter().enumerate() {
        let x = left + i as f64 * step + step * 0.15;
        let w = step * 0.7;
        let searched = plot * *searches as f64 / most as f64;
        let fetched = plot * *fetches as f64 / most as f64;
        let base = height - bottom;
        let _ = write!(
            svg,
            r#"<g class="day"><title>{}: {searches} searches, {fetches} fetches</title><rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{searched:.1}" fill="{SEARCH}"/><rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{fetched:.1}" fill="{FETCH}"/></g>"#,
            escape(date),
            base - searched,
            base - searched - fetched,
        );
        if i % 5 == 0 || i + 1 == days.len() {
            let label = date.get(5..).unwrap_or(date);
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{}" font-size="10" text-anchor="middle" fill="#5b6475">{}</text>"##,
                x + w / 2.0,
                height - 10.0,
                escape(label)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Horizontal bars of `(group name, searches, fetches)`, largest first.
pub fn group_bars(groups: &[(String, u64, u64)]) -> String {
    let mut sorted: Vec<&(String, u64, u64)> = groups.iter().collect();
    sorted.sort_by_key(|(name, s, f)| (std::cmp::Reverse(s + f), name.clone()));
    let (width, row, left, top) = (720.0, 26.0, 180.0, 24.0);
    let height = top + row * sorted.len().max(1) as f64 + 8.0;
    let most = sorted.iter().map(|(_, s, f)| s + f).max().unwrap_or(0).max(1);
    let span = width - left - 60.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" class="chart groups" aria-label="Searches and fetches per AI group, 30 days">"#
    );
    legend(&mut svg, left, 14.0);
    for (i, (name, searches, fetches)) in sorted.iter().enumerate() {
        let y = top + i as f64 * row;
        let searched = span * *searches as f64 / most as f64;
        let fetched = span * *fetches as f64 / most as f64;
        let _ = write!(
            svg,
            r##"<g class="group"><title>{name}: {searches} searches, {fetches} fetches</title><text x="{}" y="{:.1}" font-size="12" text-anchor="end" fill="#1d2330">{name}</text><rect x="{left}" y="{:.1}" width="{searched:.1}" height="16" fill="{SEARCH}"/><rect x="{:.1}" y="{:.1}" width="{fetched:.1}" height="16" fill="{FETCH}"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#5b6475">{}</text></g>"##,
            left - 8.0,
            y + 13.0,
            y + 2.0,
            left + searched,
            y + 2.0,
            left + searched + fetched + 6.0,
            y + 13.0,
            searches + fetches,
            name = escape(name),
        );
    }
    svg.push_str("</svg>");
    svg
}

fn legend(svg: &mut String, x: f64, y: f64) {
    let _ = write!(
        svg,
        r##"<rect x="{x}" y="{}" width="10" height="10" fill="{SEARCH}"/><text x="{}" y="{y}" font-size="11" fill="#1d2330">searches</text><rect x="{}" y="{}" width="10" height="10" fill="{FETCH}"/><text x="{}" y="{y}" font-size="11" fill="#1d2330">fetches</text>"##,
        y - 9.0,
        x + 14.0,
        x + 80.0,
        y - 9.0,
        x + 94.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heights(svg: &str) -> Vec<f64> {
        svg.split("height=\"").skip(1).filter_map(|rest| rest.split('"').next()?.parse().ok()).collect()
    }

    #[test]
    fn bars_are_proportional_and_labels_escaped() {
        let days =
            vec![("2026-11-01".to_owned(), 10, 0), ("2026-11-02".to_owned(), 5, 5), ("2026-11-03".to_owned(), 0, 0)];
        let svg = daily_bars(&days);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<g class=\"day\">").count(), 3);
        // The busiest day fills the plot; the others are in proportion.
        let bars: Vec<f64> = heights(&svg).into_iter().filter(|h| *h != 10.0).collect();
        assert_eq!(bars.len(), 6, "{svg}");
        assert!((bars[0] - 188.0).abs() < 0.1 && bars[1] == 0.0, "{bars:?}");
        assert!((bars[2] - 94.0).abs() < 0.1 && (bars[3] - 94.0).abs() < 0.1, "{bars:?}");
        assert!(svg.contains("2026-11-02: 5 searches, 5 fetches"));
        let groups = group_bars(&[("<Acme & co>".to_owned(), 1, 2), ("Big".to_owned(), 30, 0)]);
        assert!(groups.contains("&lt;Acme &amp; co&gt;") && !groups.contains("<Acme"));
        assert!(groups.find(">Big<").unwrap() < groups.find("&lt;Acme").unwrap(), "largest first");
    }
}
