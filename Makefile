# locklab: labs and a benchmark for distributed locks on Redis.
# The default target is test, which is what CI runs (through .ci/run).

GO        ?= go
LABDIR     = $(wildcard labs/$(LAB)-*)
BENCHARGS ?=
STACK     ?= redlock

.PHONY: test test-valkey deps vet lint lab red exercise progress reset doctor wrongfixes bench bench-full bench-quick faults strays up down test-docker images dev dev-image help

# LOCKLAB_WRONG_FIXES=1: every lab also proves each wrong fix of its
# exercise caught (labs.WrongFixes), building the lab once per fix (without
# -race, two at a time).
test: deps vet
	LOCKLAB_WRONG_FIXES=1 $(GO) test -race -timeout 30m ./...
	@$(MAKE) --no-print-directory strays

# test-valkey runs the Redis locks' suites (their contract, each package's
# own tests, the rig's) and the labs that need one server kind on Valkey
# (LOCKLAB_SERVER=valkey: valkey-server from PATH) instead of Redis. CI
# runs it after test.
VALKEY_TESTS ?= ./internal/rig/ ./internal/contract/ ./naive/ ./correct/ ./watchdog/ ./reentrant/ ./fencing/ ./redlock/ ./labs/00-two-instances/ ./labs/01-setnx-expire/ ./labs/02-check-then-set/ ./labs/03-blind-delete/ ./labs/04-get-then-del/ ./labs/05-lease-too-short/ ./labs/06-reentrancy/ ./labs/10-waiting/ ./labs/12-lost-reply/
test-valkey:
	LOCKLAB_SERVER=valkey $(GO) test -race -count=1 $(VALKEY_TESTS)

# deps installs what is missing (Redis, etcd, ZooKeeper, PostgreSQL) from
# Debian packages when it can, and says how otherwise: see .ci/deps.
deps:
	@.ci/deps

vet:
	$(GO) vet ./...
	$(GO) vet -tags docker ./internal/rig/ ./labs/...
	$(GO) vet -tags compose ./internal/composetest/

lint: vet
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; \
	elif command -v golangci-lint >/dev/null 2>&1; then golangci-lint run; \
	else echo "lint: staticcheck not installed (go install honnef.co/go/tools/cmd/staticcheck@latest); ran go vet only"; fi

# strays fails if a server started by the tests outlived them: an orphan
# (re-parented to init) whose process title carries the rig's marker
# (redis-server, etcd, ZooKeeper's JVM: "locklab-rig ..."; PostgreSQL:
# cluster_name=locklab-rig, "postgres: locklab-rig: ...").
strays:
	@strays=$$(ps -eo pid=,ppid=,args= | awk '$$2 == 1 && ($$3 == "locklab-rig" || /cluster_name=locklab-rig/ || ($$3 == "postgres:" && $$4 == "locklab-rig:")) {print $$1}'); \
	if [ -n "$$strays" ]; then echo "servers outlived the tests: $$strays"; ps -o pid,args -p $$strays; exit 1; fi

define need_lab
	@if [ -z "$(LAB)" ] || [ -z "$(LABDIR)" ]; then echo "usage: make $(1) LAB=03 (one of: $$(ls -d labs/[0-9]*/ | sed 's#labs/\([0-9]*\)-.*#\1#' | tr '\n' ' '))"; exit 2; fi
endef

# lab shows one lab verbosely: the broken run caught with its timeline, the fixed run passing.
lab:
	$(call need_lab,lab)
	$(GO) test -count=1 -v ./$(LABDIR)/

# red runs the broken lock as if it were correct: a genuinely failing test with its timeline.
red:
	$(call need_lab,red)
	LOCKLAB_RED=1 $(GO) test -count=1 -v -run 'Broken' ./$(LABDIR)/

# exercise tests your exercise.go: red until you fix it.
exercise:
	$(call need_lab,exercise)
	$(GO) test -count=1 -v -tags exercise -run 'Exercise' ./$(LABDIR)/

# progress tests every exercise.go you edited and lists each lab as solved,
# still red or not started, with the next one to do.
progress:
	@$(GO) run ./labs/learn progress

# reset restores one lab's exercise.go as shipped (yours is kept as exercise.go.mine,
# or .mine.2, .mine.3, ... after an earlier reset: no copy is overwritten).
reset:
	$(call need_lab,reset)
	@$(GO) run ./labs/learn reset $(LAB)

# doctor checks a laptop (or a training room) before the labs: Go, Redis,
# a server on a free port, the module cache for offline use, a warm build;
# and etcd, ZooKeeper and PostgreSQL where the rig looks for them, which
# only labs 13 and 14 need (a warning when missing, not a failure).
doctor:
	@command -v $(GO) >/dev/null 2>&1 || { echo "Go is not installed: https://go.dev/dl/ (Go 1.26 or later)"; exit 1; }
	@$(GO) run ./labs/learn doctor

# wrongfixes proves one lab's table of wrong fixes caught (make test does every lab).
wrongfixes:
	$(call need_lab,wrongfixes)
	LOCKLAB_WRONG_FIXES=1 $(GO) test -count=1 -v -run 'WrongFixes' ./$(LABDIR)/

# bench runs the default plan: each verdict's headline cell (3 cells), every
# lock, 3 rounds of 800 ms with the A/A control: 198 runs, about 3 minutes
# plus server start on 2 cores. bench-full runs every cell (879 runs, about
# 12.5 minutes).
bench: deps
	$(GO) run ./bench $(BENCHARGS)

bench-full: deps
	$(GO) run ./bench -full $(BENCHARGS)

bench-quick: deps
	$(GO) run ./bench -quick $(BENCHARGS)

# faults runs the fault scoreboard: every lock under the same nine fault
# schedules, 20 seeded runs each; writes faults.md, faults.json and a heatmap
# to bench/results/latest/.
faults: deps
	$(GO) run ./bench -scenarios faults $(BENCHARGS)

# Docker (docker/README.md). images builds locklab/redis:local from this
# machine's redis-server, for machines with no registry (the rig's Docker
# provider and make up use it when redis:7.4 is absent).
images:
	docker/build.sh redis

# up/down start and stop a Docker Compose stack: STACK=redlock (5 independent
# nodes on 127.0.0.1:7101-7105) or STACK=sentinel (primary, replica, 3 sentinels).
up:
	docker/compose.sh up $(STACK)

down:
	docker/compose.sh down $(STACK)

# test-docker runs, on Docker containers (LOCKLAB_PROVIDER=docker): the
# Docker provider's tests, the rig's tests that hold for any provider that
# controls servers, and labs 07 and 08 (servers killed, restarted, promoted).
DOCKER_TESTS ?= ./internal/rig/ ./labs/07-failover/ ./labs/08-redlock/
DOCKER_RUN   ?= Docker|^Test(KillMakesNodeUnreachable|Restart|ReplicaOf|StartAnswersPing|StartNGivesIndependentNodes)|^TestLab
test-docker:
	LOCKLAB_PROVIDER=docker $(GO) test -race -tags docker -count=1 -run '$(DOCKER_RUN)' $(DOCKER_TESTS)

# dev runs CMD (a shell by default) in the dev container: Go, gcc and Redis,
# for a machine with only Docker; dev-image (re)builds it, from the official
# Go image, or with OFFLINE=1 from this machine's Go and Debian packages.
dev:
	docker/dev.sh $(CMD)

dev-image:
	docker/build.sh dev $(if $(OFFLINE),--offline)

help:
	@echo "make test | lab LAB=NN | red LAB=NN | exercise LAB=NN | progress | reset LAB=NN | doctor | wrongfixes LAB=NN | bench | bench-full | bench-quick | faults | lint | deps | up/down [STACK=redlock|sentinel] | test-docker | images | dev [CMD=...] | dev-image [OFFLINE=1]"
	@echo "LOCKLAB_LONG=1 also runs the slow variants (lab 07's real Sentinel failover)."
