//! Progress bars on stderr (indicatif) that log lines never break: while a
//! bar is shown, each log line is written above it (the bar is cleared,
//! the line written whole, the bar drawn again below). indicatif hides the
//! bar when stderr is not a terminal, so a pipe or a journal gets the log
//! lines alone.

use std::io::{self, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// The bar shown now, if any: the log's writer draws around it.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// A bar shown from [`Bar::counting`] or [`Bar::waiting`] until it is
/// finished or dropped.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar of `total` items: `{prefix} ▕███░░░▏ done/total message`.
    pub fn counting(prefix: &str, total: u64) -> Bar {
        let style = ProgressStyle::with_template("{prefix} ▕{bar:24}▏ {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("█▌░");
        Bar::shown(ProgressBar::new(total).with_style(style).with_prefix(prefix.to_owned()))
    }

    /// A spinner with the time passed, for work whose length is unknown.
    pub fn waiting(prefix: &str) -> Bar {
        let style = ProgressStyle::with_template("{spinner} {prefix} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::new_spinner().with_style(style).with_prefix(prefix.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        Bar::shown(bar)
    }

    fn shown(bar: ProgressBar) -> Bar {
        *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
        Bar(bar)
    }

    /// Moves the bar to `done` of `total`, saying what it is doing.
    pub fn set(&self, done: u64, total: u64, message: impl Into<String>) {
        self.0.set_length(total);
        self.0.set_position(done);
        self.0.set_message(message.into());
    }

    /// Leaves the bar where it stands: later output goes below it.
    pub fn finish(self) {
        self.0.finish();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        // One bar at a time: this one was the one shown.
        *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = None;
        // Dropped unfinished (an error): the bar goes, the error is printed alone.
        if !self.0.is_finished() {
            self.0.finish_and_clear();
        }
    }
}

/// Writes one log line above `bar`, if one is shown.
fn write_around(bar: Option<&ProgressBar>, write: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    match bar {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// The log's writer: stderr, above the bar.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let bar = SHOWN.lock().unwrap_or_else(|p| p.into_inner()).clone();
        write_around(bar.as_ref(), || {
            let mut err = io::stderr().lock();
            err.write_all(buf)?;
            err.flush()
        })?;
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
    use indicatif::{InMemoryTerm, ProgressDrawTarget, TermLike};

    #[test]
    fn a_log_line_is_written_whole_above_the_bar_and_the_bar_is_drawn_again_below() {
        let term = InMemoryTerm::new(10, 80);
        let bar = ProgressBar::with_draw_target(Some(10), ProgressDrawTarget::term_like(Box::new(term.clone())))
            .with_style(ProgressStyle::with_template("{prefix} {pos}/{len} {msg}").unwrap())
            .with_prefix("seeding");
        bar.set_position(3);
        bar.set_message("products");
        assert_eq!(term.contents(), "seeding 3/10 products");
        write_around(Some(&bar), || term.write_line("INFO a region started")).unwrap();
        bar.set_position(4);
        assert_eq!(term.contents(), "INFO a region started\nseeding 4/10 products");
        write_around(Some(&bar), || term.write_line("WARN a slow disk")).unwrap();
        assert_eq!(term.contents(), "INFO a region started\nWARN a slow disk\nseeding 4/10 products");
    }

    #[test]
    fn without_a_bar_a_log_line_is_written_as_it_is() {
        let term = InMemoryTerm::new(4, 40);
        write_around(None, || term.write_line("INFO plain")).unwrap();
        assert_eq!(term.contents(), "INFO plain");
    }
}
