"""Test-run logs, where ``PASS:`` is a test's status and no password, and the passwords that look like them.

A test harness writes a status word and a test's name: DejaGnu (``PASS: gdb.base/break.exp:
...``), automake (``PASS: tests/foo.sh``), Go (``--- PASS: TestX/case (0.00s)``), pytest, TAP,
CTest, meson, cargo. The redactor must keep all of them and still find a password written beside
the same words: ``PASSWORD=...``, ``DB_PASS=...``, ``pass: ...`` in a config file, a bare ``PASS``
in an environment block or printed by a script.

Two sets, written apart: ``TUNING_*`` is what the rule was chosen on; ``HELD_OUT_*`` was written
before the rule changed and read only to judge the final rule (with real logs on the machine,
``benchmarks/redaction.py``).
"""

from __future__ import annotations

from tests.context.secret_corpus import Secret

# --- held out: written before the rule changed, not run while it was chosen --------------------------

HELD_OUT_LOGS = {
    "automake with TAP numbers": """\
PASS: tests/t-parse.test 1 - parses an empty file
PASS: tests/t-parse.test 2 - rejects a truncated header
FAIL: tests/t-parse.test 3 - keeps unicode names # TODO utf-16
SKIP: tests/t-net.test 1 # SKIP no network
PASS: tests/gvariant 12 /gvariant/serialiser/children
ERROR: tests/t-crash.test - exited with status 139
""",
    "automake without directories": """\
PASS: test-hash-map
PASS: test-c-strcasestr.sh
PASS: test-utimens-common
FAIL: test-utimens
XFAIL: test-nonblocking-pipe.sh
PASS: test-sha1-buffer
============================================================================
Testsuite summary for gnulib-tests 2024.01
============================================================================
# TOTAL: 6
# PASS:  4
# SKIP:  0
# XFAIL: 1
# FAIL:  1
# XPASS: 0
# ERROR: 0
""",
    "DejaGnu for a compiler": """\
Running /build/gcc/testsuite/gcc.dg/dg.exp ...
PASS: gcc.dg/pr12345.c (test for excess errors)
PASS: g++.dg/cpp0x/auto1.C  -std=c++14 (test for excess errors)
PASS: libgomp.c/omp-loop01.c execution test
UNSUPPORTED: gcc.dg/vect/vect-avx512.c
XPASS: gcc.dg/Wall-2.c (test for warnings, line 12)
\t\t=== gcc Summary ===
# of expected passes\t\t123456
""",
    "Go subtests, nested": """\
=== RUN   TestParse
=== RUN   TestParse/empty_input
    --- PASS: TestParse/empty_input (0.00s)
=== RUN   TestParse/unicode/emoji-in-key
    --- PASS: TestParse/unicode/emoji-in-key (0.01s)
--- PASS: TestParse (0.01s)
--- FAIL: TestServe/timeout_30s (30.00s)
FAIL\tgithub.com/acme/widget/server\t30.120s
""",
    "pytest, verbose with a summary": """\
tests/test_api.py::test_login_with_password PASSED                        [ 25%]
tests/test_api.py::test_token_refresh[expired-401] FAILED                 [ 50%]
PASSED tests/test_api.py::test_login_with_password
FAILED tests/test_api.py::test_token_refresh[expired-401] - AssertionError: 401 != 200
======================== 1 failed, 3 passed in 0.42s =========================
""",
    "a harness printing results": """\
[  1/120] PASS: crypto/aes_gcm_vectors.json
[  2/120] PASS: crypto/chacha20_poly1305.json
test-suite summary: PASS: 118, FAIL: 2
""",
}

HELD_OUT_PASSWORDS = [
    Secret("password", "services:\n  db:\n    environment:\n      PASS: Xq7#kL2m9vRz\n", "Xq7#kL2m9vRz"),
    Secret("password", "export PASS='pA55-w0rd!23'\n", "pA55-w0rd!23"),
    Secret("password", "[smtp]\nuser = mailer\npass = hR7!xk2Lq9\n", "hR7!xk2Lq9"),
    Secret("password", "MYSQL_ROOT_PASS=Zt4#pL9q2w\n", "Zt4#pL9q2w"),
    Secret("password", "user: admin\npass: correct-horse-9\n", "correct-horse-9"),
    Secret("password", '{"user": "ada", "pass": "9fK#2mLq8x"}\n', "9fK#2mLq8x"),
    Secret("password", "LOGIN: ada\nPASS: Kz8%wQ1nTe\n", "Kz8%wQ1nTe"),
    Secret("password", "DB_PASS: y7Gk2#pQm1\n", "y7Gk2#pQm1"),
]

# --- tuning: what the rule was chosen on ----------------------------------------------------------------

TUNING_LOGS = {
    "DejaGnu, a debugger's test run": """\
Running /build/gdb/testsuite/gdb.base/break.exp ...
PASS: gdb.base/break.exp: run until function breakpoint
PASS: gdb.base/break.exp: break on non-existent source line
KFAIL: gdb.threads/tls.exp: print thread-local storage (PRMS: gdb/1234)
PASS: gdb.python/py-value.exp: print value: test_value_in_inferior
FAIL: gdb.base/sigall.exp: get signal TSTP
PASS: gdb.base/printcmds.exp: p $pc
""",
    "automake test-suite log": """\
PASS: tests/misc/sort.sh
PASS: t/0001-init.sh
FAIL: tests/rm/r-4.sh
PASS: test-strtod
PASS: test-base64-decode
SKIP: tests/misc/selinux.sh
""",
    "Go test -v": """\
=== RUN   TestFoo
--- PASS: TestFoo (0.00s)
=== RUN   TestFoo/with_case
    --- PASS: TestFoo/with_case (0.00s)
--- FAIL: TestBar (0.02s)
PASS
ok  \tgithub.com/acme/tool/internal\t0.012s
""",
    "pytest -rA, TAP, CTest, meson, cargo, jest": """\
PASSED tests/test_io.py::test_read_csv[utf-8]
tests/test_io.py::test_write_parquet PASSED
ok 1 - PASS: reads the config
1/3 Test #1: unit_core ........................   Passed    0.01 sec
 1/12 mylib:unit / test_parse                  OK              0.02s
test parser::tests::parses_empty ... ok
PASS src/components/App.test.js (1.204 s)
# Totals: pass:3 fail:0 xfail:0 xpass:0 skip:0 error:0
pass: 118 fail: 2
""",
}

TUNING_PASSWORDS = [
    Secret("password", "PASSWORD=Tr0ub4dor&3x\n", "Tr0ub4dor&3x"),
    Secret("password", "DB_PASS=abcd3fgh1\n", "abcd3fgh1"),
    Secret("password", "pass: hunter22x\n", "hunter22x"),
    Secret("password", "PASS: Kq9$mWx2Lp\n", "Kq9$mWx2Lp"),
    Secret("password", "env:\n    PASS: Vb3#nQ8zYt\n", "Vb3#nQ8zYt"),
    Secret("password", "PASS=Kq9$mWx2Lp\n", "Kq9$mWx2Lp"),
    Secret("password", "password: s3cr3t-Pass\n", "s3cr3t-Pass"),
    Secret("password", "USER: bob PASS: Wx4!rT8kLm\n", "Wx4!rT8kLm"),
    Secret("password", "PASS: hunter22x\n", "hunter22x"),
]
