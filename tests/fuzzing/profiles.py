"""Profiles: which generator features (`generator.FEATURES`) a fuzz run uses.

`full` is every feature (what `make fuzz` runs by default). `ci` is what
`tests/fuzzing/test_fuzz_breaks.py` runs: the full profile minus `CI_EXCLUDED`, the features
whose programs hit open bugs. Each excluded feature has a strict-xfail regression test in
`tests/fuzzing/test_known_failures.py` holding the minimized program. When the bug is fixed
that test passes, so strict xfail fails the suite: delete its xfail marker and the feature's
entry here, and the CI fuzz test covers the feature again.

CI_EXCLUDED (feature -> failure class, regression test in test_known_failures.py):
  dict_views      -> "stale dict view": keys()/values()/items() taken before a mutation of
                     the dict see the old contents (silent mismatch; test_stale_dict_view)
  live_iterators  -> "stale list iterator": an iterator over a list made before the list
                     shrinks still yields the removed item (silent mismatch;
                     test_stale_list_iterator)
  dict_iter_raise -> "dict iterator after resize": the first next() of a dict iterator made
                     before the dict grew returns a key instead of raising RuntimeError
                     (raises only in eager; test_dict_iterator_after_resize)
  collections     -> "keyword call break in with": a break at a call with keyword arguments
                     to an untraced callable (deque(maxlen=...), OrderedDict(a=...)) inside a
                     user context manager's `with` drops the keyword names (raises only
                     compiled; test_keyword_call_break_in_with)
"""
from .generator import FULL_PROFILE

CI_EXCLUDED = {
    "dict_views": "test_stale_dict_view",
    "live_iterators": "test_stale_list_iterator",
    "dict_iter_raise": "test_dict_iterator_after_resize",
    "collections": "test_keyword_call_break_in_with",
}

PROFILES = {
    "full": FULL_PROFILE,
    "ci": FULL_PROFILE - set(CI_EXCLUDED),
}
