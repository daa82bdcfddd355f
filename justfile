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
