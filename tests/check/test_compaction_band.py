"""The band after a compaction is two-sided and comes from what the stream shows of the system prefix, not from the
reference's own estimate: where the first call read the prefix from the cache, the summary alone is knowably short;
where it found nothing cached, the summary alone and the summary plus the whole first prompt both pass."""

from __future__ import annotations

from ctxsim import SessionBuilder
from ctxsim.check import Report, run_tracker
from ctxsim.trackers.catalogue import make, reference_for
from ctxsim.world import Session, compaction_band


def _session(*, cached: int, written: int) -> Session:
    """A first call reading ``cached`` tokens from the cache and writing ``written``, a second call, a compaction
    to a 20,000-token summary, and a call after it."""
    return (SessionBuilder(seed=3).query("work").call(input=3, cache_creation=written, cache_read=cached)
            .call(input=3, cache_creation=1_000, cache_read=cached + written).compact(20_000)
            .query("more").call().build())


def _at_compaction(report: Report) -> tuple[int | None, int | None, bool]:
    point = next(p for p in report.points if p.observation.kind == "compaction")
    return point.estimate, point.error, point.ok


def test_the_band_runs_from_the_summary_alone_where_the_first_call_found_nothing_cached() -> None:
    assert compaction_band(20_000, 32_000, (0, 30_000)) == (20_000, 50_000)
    assert compaction_band(20_000, 32_000, (12_000, 12_500)) == (32_000, 32_000)


def test_where_the_stream_shows_no_cached_prefix_the_reference_and_the_summary_alone_both_pass() -> None:
    session = _session(cached=0, written=30_000)  # a baseline of 12,000 and an 18,000-token first message
    reference = run_tracker(reference_for(session), session)
    summary_only = run_tracker(make("ccstatusline", session), session)
    ref_estimate, ref_error, ref_ok = _at_compaction(reference)
    post_estimate, post_error, post_ok = _at_compaction(summary_only)
    assert ref_ok and post_ok
    assert ref_estimate is not None and ref_estimate > 32_000 and post_estimate == 20_000
    # off the truth on either side, each inside what the stream allows: ok (estimated) both
    assert (ref_error, post_error) == (18_000, -12_000)


def test_where_the_stream_shows_the_cached_prefix_the_summary_alone_fails_short_by_it() -> None:
    session = _session(cached=12_000, written=500)
    summary_only = run_tracker(make("ccstatusline", session), session)
    estimate, _, ok = _at_compaction(summary_only)
    truth = next(p for p in summary_only.points if p.observation.kind == "compaction").observation.truth
    assert not ok and estimate == 20_000 and truth.prompt == 32_000
    assert truth.estimated == (32_000, 32_000)
