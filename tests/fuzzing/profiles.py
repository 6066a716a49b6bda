"""Profiles: which generator features (`generator.FEATURES`) a fuzz run uses.

`full` is every feature (what `make fuzz` runs by default). `ci` is what
`tests/fuzzing/test_fuzz_breaks.py` runs: the full profile minus `CI_EXCLUDED`, the features
whose programs hit open bugs. Each excluded feature has a strict-xfail regression test in
`tests/fuzzing/test_known_failures.py` holding the minimized program. When the bug is fixed
that test passes, so strict xfail fails the suite: delete its xfail marker and the feature's
entry here, and the CI fuzz test covers the feature again.

CI_EXCLUDED (feature -> the regression test in test_known_failures.py of the open failure
class that excludes it). The four classes found first (stale dict views, stale list iterators,
dict iterators after a resize, keyword calls breaking inside a user `with`) are fixed, and so
are the three `custom_exc` hit (an attribute written on a caught exception lost, a bare `raise`
after such a write, a bare `raise` resumed after a break in the handler). None is open.
"""
from .generator import FULL_PROFILE

CI_EXCLUDED: dict = {}

PROFILES = {
    "full": FULL_PROFILE,
    "ci": FULL_PROFILE - set(CI_EXCLUDED),
}
