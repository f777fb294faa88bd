//! One progress line on stderr that log lines do not break. While a line is
//! shown, each log line first clears it, is written on a line of its own,
//! and the progress line is drawn again below it.

use std::io::{self, Write};
use std::sync::Mutex;

/// The progress line shown now, if any.
static SHOWN: Mutex<Option<String>> = Mutex::new(None);

/// Log lines and the progress line share this order of writes.
fn clear(out: &mut impl Write, shown: &str) -> io::Result<()> {
    write!(out, "\r{:width$}\r", "", width = shown.chars().count())
}

/// Shows `text` as the progress line, in place of the one before.
pub fn show(text: &str) {
    let mut shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = io::stderr().lock();
    let _ = draw(&mut err, shown.as_deref(), text);
    *shown = Some(text.to_owned());
}

fn draw(out: &mut impl Write, before: Option<&str>, text: &str) -> io::Result<()> {
    if let Some(before) = before {
        clear(out, before)?;
    }
    write!(out, "{text}")?;
    out.flush()
}

/// Ends the progress line where it stands: later output goes below it.
pub fn finish() {
    let mut shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
    if shown.take().is_some() {
        let _ = writeln!(io::stderr());
    }
}

/// Writes one log line around the progress line, if one is shown.
fn write_log(out: &mut impl Write, shown: Option<&str>, line: &[u8]) -> io::Result<()> {
    if let Some(shown) = shown {
        clear(out, shown)?;
    }
    out.write_all(line)?;
    if let Some(shown) = shown {
        write!(out, "{shown}")?;
    }
    out.flush()
}

/// The log's writer: stderr, around the progress line.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
        write_log(&mut io::stderr().lock(), shown.as_deref(), buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Stderr {
        Stderr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_clears_the_progress_line_and_draws_it_again_below() {
        let mut out = Vec::new();
        draw(&mut out, None, "seeding 3/10").unwrap();
        write_log(&mut out, Some("seeding 3/10"), b"INFO a region started\n").unwrap();
        draw(&mut out, Some("seeding 3/10"), "seeding 4/10").unwrap();
        let text = String::from_utf8(out).unwrap();
        let blank = " ".repeat("seeding 3/10".len());
        assert_eq!(text, format!("seeding 3/10\r{blank}\rINFO a region started\nseeding 3/10\r{blank}\rseeding 4/10"),);
        // What a terminal shows: the log line whole on its own line, the
        // progress line last.
        let lines: Vec<&str> = text.split('\n').map(|l| l.rsplit('\r').next().unwrap_or(l)).collect();
        assert_eq!(lines, ["INFO a region started", "seeding 4/10"]);
    }

    #[test]
    fn without_a_progress_line_a_log_line_is_written_as_it_is() {
        let mut out = Vec::new();
        write_log(&mut out, None, b"INFO plain\n").unwrap();
        assert_eq!(out, b"INFO plain\n");
    }
}
