"""Profiles: which generator features (`generator.FEATURES`) a fuzz run uses.

`full` is every feature (what `make fuzz` runs by default). `ci` is what
`tests/fuzzing/test_fuzz_breaks.py` runs: the full profile minus `CI_EXCLUDED`, the features
whose failures are open bugs, each with a strict-xfail regression test in
`tests/fuzzing/test_known_failures.py` (the test named in the value). When a bug is fixed,
that xfail starts passing (strict: the suite fails), so delete the xfail marker and the
feature's line here, and the CI fuzz test covers the feature again.

CI_EXCLUDED (feature: failure class -> regression test):
  filled in below, one line per feature.
"""
from .generator import FULL_PROFILE

CI_EXCLUDED = {}

PROFILES = {
    "full": FULL_PROFILE,
    "ci": FULL_PROFILE - set(CI_EXCLUDED),
}
