"""Fixtures shared by the test modules: every test gets its own store; the AppTest modules' first start."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

# Hypothesis fails a property whose example ran over 200 ms (its default deadline): a timing check, whose outcome
# depends on the machine's load. No property here is about speed, so none has a deadline; a test's own @settings
# (max_examples and the rest) inherits this.
settings.register_profile("evalcore", deadline=None)
settings.load_profile("evalcore")

# Each collection rewrites the asserts of every test module (pytest's assertion rewriting) and compiles evalcore; both
# are cached as .pyc in __pycache__ (git-ignored), unless PYTHONDONTWRITEBYTECODE is set, as it is on the shared
# development machine: then every collection, in each xdist worker, redoes it (about 8 s of the 17 s a collection
# took there). The cache is always written for the test run; the files are checked against their sources' mtimes.
sys.dont_write_bytecode = False


# Tests that took over 20 s in a whole run on the 2-core development machine (``python -m pytest -m "" -n 2
# --durations=80`` at 051be06: 1,665 tests in 61 minutes, the machine shared). They are left out of the quick pass
# (addopts: -m "not slow") and run by CI (.ci/run: python -m pytest -m slow). Each repeats at full size what a quicker
# test proves on less (a whole loop or simulation, every format through the CLI, a property over many examples), or
# is an end-to-end walk the quick pass's unit and AppTest tests cover piece by piece. Listed here, by node id, rather
# than marked in files other work is editing; a file of its own marks itself (tests/test_align_loop.py), and
# tests/browser/conftest.py marks every browser test.
SLOW_TESTS = (
    "tests/test_meta_compare.py::test_exact_permutation_pvalue_against_enumeration[kendall-dataset]",
    "tests/test_meta_compare.py::test_exact_permutation_pvalue_against_enumeration[pearson-dataset]",
    "tests/test_meta_compare.py::test_paired_bootstrap_has_its_size_under_equal_correlation",
    "tests/test_meta_compare.py::test_identical_judges_differ_by_nothing[permutation-dataset]",
    "tests/test_meta_inference.py::test_permutation_pvalues_agree_with_scipys_exact_kendall_and_never_go_below_the_",
    "tests/test_meta_classification.py::test_meta_json_agreement_block",
    "tests/test_meta_classification.py::test_kappa_properties",
    "tests/test_meta_fastboot.py::test_grouped_jackknife_interval_within_monte_carlo_error_of_leave_one_out[dataset-k",
    "tests/test_meta_correlation.py::test_dataset_level_pools_items_and_counts_dropped",
    "tests/test_app_improve.py::test_a_candidate_tuned_to_development_noise_is_said_not_to_carry_over",
    "tests/test_app_improve.py::test_the_loop_on_the_page_finds_the_proposal_and_checks_it_once_on_test",
    "tests/test_app_improve.py::test_a_candidate_worse_than_the_baseline_is_not_offered_as_a_gain",
    "tests/test_app_walkthrough3.py::test_across_systems_interval_matches_explicit_resampling_of_systems",
    "tests/test_app_walkthrough3.py::test_exported_report_of_a_filtered_view_compares_the_runs_on_those_systems",
    "tests/test_app_report.py::test_report_charts_use_the_pages_run_colours",
    "tests/test_app_pages.py::test_every_analysis_page_renders_with_real_numbers",
    "tests/test_app_pages.py::test_score_with_loopback_judge_then_bias_and_failures",
    "tests/test_app_scale.py::test_export_report_builds_then_downloads_the_cached_report",
    "tests/test_views_bias.py::test_cli_bias_json_mirrors_the_bias_page",
    "tests/test_views_bias.py::test_cli_bias_says_what_is_wrong",
    "tests/test_align_labels.py::test_the_loop_on_a_nominal_dimension_measures_cohens_kappa_and_finds_the_rubric",
    "tests/test_align_labels.py::test_two_equally_good_labellers_are_rarely_called_different_on_a_small_test_part",
    "tests/test_align_cli.py::test_align_text_output_an_edit_and_a_chosen_version",
    "tests/test_align_cli.py::test_align_json_has_the_documented_keys_and_a_second_run_is_counted",
    "tests/test_import_pairs.py::test_cli_import_pairs_verdicts_and_meta",
    "tests/test_import_pairs.py::test_cli_bad_file_writes_nothing",
    "tests/test_importers.py::test_wide_and_long_reshaping_give_identical_human_scores",
    "tests/test_byo_import.py::test_library_cli_and_data_page_give_the_same_dataset_and_runs",
    "tests/test_byo_import.py::test_judge_score_file_partial_coverage_then_unmatched_keys",
    "tests/test_judge_batch.py::test_cli_submit_no_wait_then_collect_in_a_new_process",
    "tests/test_judge_contracts.py::test_meta_json_and_the_report_name_the_variant",
    "tests/test_judge_endpoints.py::test_cli_repeated_base_url",
    "tests/test_run_config.py::test_any_dict_round_trips_with_its_keys_in_order",
    "tests/test_label_store.py::test_cli_plan_json",
    "tests/hardening/test_trust_round3.py::test_differential_what_trust_accepts_the_client_reads_the_same",
    "tests/hardening/test_upload_memory.py::test_distinct_items_parquet_is_refused_past_its_budget_and_imported_withi",
    "tests/hardening/test_store.py::test_killed_run_shows_interrupted_then_resumes_without_repeating",
    "tests/hardening/test_store.py::test_second_process_on_the_same_run_exits_2_and_no_request_is_repeated",
    "tests/hardening/test_shared_server.py::test_item4_another_users_private_baseline_run_is_not_shown_on_the_improve_",
    "tests/hardening/test_shared_server.py::test_item8_a_new_session_of_the_score_page_sees_what_the_last_one_started",
    "tests/hardening/test_shared_server.py::test_item6_reading_a_test_parts_runs_on_compare_is_a_counted_check",
    # over 20 s in the quick pass's own run (-n 2 --durations=120, ec5965b, the machine shared)
    "tests/test_registry.py::test_the_cli_scores_with_the_plugin_method_and_imports_the_plugin_format",
    "tests/test_app_label.py::test_two_annotators_reload_and_every_page_sees_the_labels",
    "tests/test_judge_contracts.py::test_from_the_cli_a_reasoning_judge_scores_every_item_with_three_refusals",
    "tests/hardening/test_upload_memory.py::test_many_pairs_import_within_the_budget_that_admits_them",
    "tests/hardening/test_upload_memory.py::test_a_single_cell_csv_is_refused_before_any_reader_copies_it",
    "tests/hardening/test_upload_bombs.py::test_parquet_bomb_is_refused_from_its_dictionary_with_little_memory",
    "tests/test_import_pairs_swapped.py::test_a_bad_pairwise_file_through_the_cli_names_file_row_and_column_and_writes_",
    "tests/test_meta_alt_test.py::test_exact_test_by_enumeration_of_the_trinomial",
)


def pytest_itemcollected(item):
    """Mark the tests of SLOW_TESTS slow (before -m selects the quick pass)."""
    if item.nodeid.startswith(SLOW_TESTS):
        item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def own_store(tmp_path_factory, monkeypatch):
    """Each test its own store (EVALCORE_DB in a fresh directory), whatever the environment says: a test never
    reads or writes the user's ~/.evalcore/evalcore.db, nor a store another test filled. A test that needs a
    particular file sets EVALCORE_DB itself (monkeypatch), after this."""
    path = tmp_path_factory.mktemp("store") / "evalcore.db"
    monkeypatch.setenv("EVALCORE_DB", str(path))
    return path


@pytest.fixture
def first_start(tmp_path, monkeypatch):
    """What a first start of the app looks like: a fresh store (``tmp_path / "evalcore.db"``), a small bootstrap, no
    judge credentials, and empty Streamlit caches (AppTest runs the app in this process: datasets and runs cached by
    an earlier test were read from another store)."""
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "evalcore.db"))
    monkeypatch.setenv("EVALCORE_RESAMPLES", "20")
    for k in list(os.environ):
        if k.startswith("OPENAI_") or k.startswith("AZURE_OPENAI"):
            monkeypatch.delenv(k)
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield tmp_path / "evalcore.db"
    st.cache_data.clear()
    st.cache_resource.clear()
