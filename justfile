# trc developer recipes (https://github.com/casey/just)

default: check

# exhaustive check on the default profile (linux-6.18), SACK and non-SACK
check *ARGS:
    cargo run --release -- check {{ARGS}}

# every profile against every property
matrix *ARGS:
    cargo run --release -- matrix {{ARGS}}

# the whole test suite (what CI runs)
test:
    cargo test --release --workspace

# run a packetdrill-format script on the real kernel (root + /dev/net/tun)
kernel-run FILE *ARGS:
    cargo run --release -- kernel run {{FILE}} {{ARGS}}

ci:
    bash .ci/run

# the detection benchmark of docs/kernel-bugs.md: every mutant of vm/mutants/ (or those given) on
# trc's suites, the regressions, packetdrill's gtests and trc diff, in qemu; table in target/kernel-bugs/table.md
kernel-bugs *ARGS:
    cargo build --release -p trc -p trc-testkit
    vm/mutants/kernel-bugs.sh {{ARGS}}

# F11's and F9's selftests (reproducers in the selftest form, and the fixes' regression tests in
# counterexamples/upstream/) under the 7.2 tree's ksft_runner.sh in a VM: on Debian's 7.2 and on
# 7.2 with both fixes (built by the test, incrementally on the base of `trc kernel build debian:sid`)
selftest-vm:
    cargo test --release -p trc --test upstream_forms selftests_of_f11_and_f9_under_ksft_runner_in_a_vm -- --nocapture
