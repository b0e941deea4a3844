"""script_test.py: runs a Python test module the way scripts/test reads script tests.

scripts/test_report.py counts a script test by the line "N passed, M failed" it prints, so
each Python test under scripts/ ends with run(__name__) instead of unittest.main().
"""
import sys
import unittest


class _CountingResult(unittest.TextTestResult):
    """unittest counts failures and errors; the report line needs the passes too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def run(module_name):
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(sys.modules[module_name].__doc__.strip())
        print("\nUsage: %s   runs the tests, prints 'N passed, M failed'" % sys.argv[0])
        sys.exit(0)
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[module_name])
    result = unittest.TextTestRunner(resultclass=_CountingResult, verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.passed, failed))
    sys.exit(1 if failed or result.passed == 0 else 0)


if __name__ == "__main__":
    print(__doc__.strip())
