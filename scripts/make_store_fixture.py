"""Build tests/fixtures/store_v0.db: a store as the release before the versioned schema wrote it.

Run it on the code of that release (the schema it writes is whatever the checked-out ``evalcore`` creates), e.g.

    git worktree add /tmp/v0 f83ee0d && cd /tmp/v0 && python scripts/make_store_fixture.py OUT.db

It holds one of everything a user's ``~/.evalcore/evalcore.db`` can hold: a dataset uploaded through the importer
(with its judge-score column imported as a run), a run scored through the loopback (cache, judgments, answers,
probe failures), a run scored through the loopback's Batch API (the batches table), labels (with a skip and an undo),
two criteria versions of one dimension, and a lease; from schema version 5 on, a development / test split and two
final checks on it. tests/test_store_migrations.py migrates a copy and compares it with the original row by row.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalcore.importers import guess_columns, import_table, mapping_from_guesses, read_table, save_import  # noqa: E402
from evalcore.judge import batch, runner  # noqa: E402
from evalcore.judge.client import Endpoint  # noqa: E402
from evalcore.testing.loopback import serve  # noqa: E402

try:  # the release that wrote store_v0.db
    from evalcore.judge.store import Store  # noqa: E402
    from evalcore.judge.types import Criteria  # noqa: E402
except ImportError:  # later code (the file it writes is then already versioned)
    from evalcore.store import Store  # type: ignore[no-redef]  # noqa: E402
    from evalcore.types import Criteria  # type: ignore[no-redef]  # noqa: E402

WIDE = ROOT / "tests" / "fixtures" / "byo" / "wide_judges.csv"


def _score(engine_call, ds, *, method, dimensions, criteria_by_dim, endpoint, store, limit, run_id, label="",
           **call_kw):
    """The engine's call in the form of the checked-out code: the old release took keywords; later code takes a
    ScoringSpec and EngineOptions (evalcore.judge.spec)."""
    import inspect

    if "spec" not in inspect.signature(engine_call).parameters:
        return engine_call(ds, method=method, dimensions=dimensions, criteria_by_dim=criteria_by_dim,
                           endpoint=endpoint, store=store, limit=limit, run_id=run_id, label=label, **call_kw)
    from evalcore.judge.spec import EngineOptions, ScoringSpec

    spec = ScoringSpec(ds, method, dimensions, criteria_by_dim, limit=limit, run_id=run_id, label=label)
    return engine_call(spec, EngineOptions(endpoint), store=store, **call_kw)


def build(path: Path) -> None:
    if path.exists():
        raise SystemExit(f"{path} exists; give a new file")
    store = Store(path)
    mapping = mapping_from_guesses(guess_columns(read_table(WIDE)), scales={"coherence": (1.0, 5.0)})
    result = import_table(WIDE, mapping, name="fixture study")
    save_import(result, store)
    ds = result.dataset
    v1 = Criteria("coherence", "You will be given a summary.", "Coherence: the summary is well organised.", 1, 5,
                  "1. Read the article.\n2. Score.")
    v2 = Criteria("coherence", "You will be given a summary of a news article.",
                  "Coherence: the summary is well organised and flows.", 1, 5, "1. Read.\n2. Compare.\n3. Score.")
    store.save_criteria(ds.id, v1, note="first")
    h2 = store.save_criteria(ds.id, v2, note="second")
    with serve() as srv:
        ep = Endpoint(srv.base_url, "loop-model", provider="local")
        _score(runner.score_dataset, ds, method="geval", dimensions=["coherence"],
               criteria_by_dim={"coherence": v2}, endpoint=ep, store=store, limit=4, run_id="fixture-online",
               label="online")
        _score(runner.score_dataset, ds, method="gptscore", dimensions=["coherence"],
               criteria_by_dim={"coherence": v2}, endpoint=ep, store=store, limit=2, run_id="fixture-gptscore")
        _score(batch.score_dataset_batch, ds, method="geval", dimensions=["coherence"],
               criteria_by_dim={"coherence": v1}, endpoint=ep, store=store, limit=3, poll_s=0.02,
               run_id="fixture-batch")
    items = list(ds.items["item_id"])
    for i, item in enumerate(items[:5]):
        store.save_label(ds.id, item, "coherence", "ann-a", float(1 + i % 5), strategy="random", session="s1")
    store.save_label(ds.id, items[5], "coherence", "ann-a", None, skipped=True, session="s1")
    store.save_label(ds.id, items[6], "coherence", "ann-a", 2.0, session="s1")
    store.undo_label(ds.id, "ann-a")
    store.save_label(ds.id, items[0], "coherence", "ann-b", 4.0, strategy="stratified", session="s2")
    store.acquire_lease("fixture-online")
    if hasattr(store, "record_final_check"):  # schema version 5 and later: a split and two final checks on it
        _align_rows(store, ds)
    store.close()
    print(f"wrote {path} ({path.stat().st_size} bytes); criteria {h2[:8]}")


def _align_rows(store, ds) -> None:
    """A development / test split of the fixture's documents and two final checks on its test part (one signed in
    as alice where the release records owners), as the Improve page writes them."""
    from evalcore.align.split import make_split, save_split

    split = make_split(ds, "coherence", test_share=0.5, seed=3)
    save_split(store, split)
    for n, (chosen, result) in enumerate([("c" * 64, {"test_gain": 0.1, "dev_gain": 0.2}),
                                          ("d" * 64, {"test_gain": -0.05, "dev_gain": 0.15})]):
        store.record_final_check(ds.id, split.split_id, dimension="coherence", method="geval",
                                 baseline_hash="b" * 64, chosen_hash=chosen, baseline_run=f"fixture-base-{n}",
                                 chosen_run=f"fixture-chosen-{n}", result=result)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    build(ap.parse_args().out)
