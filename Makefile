# Chorus — common tasks. The README's two commands are `go run ./cmd/chorus demo` (the same as
# `make demo`) and `bash .ci/run`, which sets a fresh machine up for the tests and then runs
# `make test` (docs/demo.md says what it installs).
GO      ?= go
PKGS    ?= ./...
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: demo test test-tagged bench fuzz dist size lint clean soak deb

demo:
	$(GO) run ./cmd/chorus demo

# The full test suite, as CI runs it (Mosquitto, espeak-ng, Open JTalk, OpenCV and
# PortAudio come from .ci/install-deps).
# One package at a time (-p 1): the outside tests hold the room to the issues' figures
# (resumes within 5 s, a standby grants within 3 s, a vision answer within 100 ms)
# with a dozen processes each; on a 2-core machine two such packages at once would
# measure the machine's overload, not the room.
# -timeout 30m: the outside tests (tests/system) are one package of about
# eleven minutes on a 2-core machine, past go test's default of ten.
test: lint
	$(GO) test -race -count=1 -p 1 -timeout 30m $(PKGS)
	$(MAKE) test-tagged

# Drivers that need C libraries, built and tested for real. gordonklaus/portaudio
# passes a stream id to C as an unsafe.Pointer, which -race's checkptr rejects: the
# check is switched off for that one package, the race detector stays on.
test-tagged:
	$(GO) test -race -gcflags='github.com/gordonklaus/portaudio=-d=checkptr=0' -count=1 -timeout 30m -tags "gocv portaudio" ./drivers/... ./device/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags bench ./cmd/chorus/...
	CGO_ENABLED=0 $(GO) build $(PKGS)

# The soak of RELIABILITY.md: 30 minutes of a 5-companion room of chorusd
# processes on Mosquitto at 20 messages a second; RSS, goroutines and held
# entries sampled and checked, the figures printed at the end. CI runs a
# 45-second version inside `make test`.
SOAK ?= 30m
soak:
	CHORUS_SOAK=$(SOAK) CHORUS_REQUIRE_MOSQUITTO=1 $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 2h ./tests/system/

bench:
	$(GO) test -run XXX -bench 'BusRoundTrip|Floor' -benchtime 2000x ./cmd/chorus/internal/bench/
	$(GO) test -run XXX -bench TurnGap -benchtime 30x ./cmd/chorus/internal/bench/
	$(GO) test -run XXX -bench 'VisionRoundTrip|SpeakFirstAudio' -benchtime 1000x ./cmd/chorus/internal/bench/
	$(GO) test -run XXX -bench CommandCameraPipe -benchtime 20x ./cmd/chorus/internal/bench/
	$(GO) test -run XXX -bench Voice -benchtime 10x ./cmd/chorus/internal/bench/
	$(GO) test -run XXX -bench Energy -benchtime 200x ./drivers/vad/
	$(GO) test -run XXX -bench . ./runtime/protocol/
	$(GO) test -run XXX -bench RejectMalformed ./runtime/room/
	$(GO) test -run XXX -bench 'Gap|Realtime' -benchtime 1x -timeout 1h ./cmd/chorus/internal/bench/
	CGO_ENABLED=0 $(GO) build -o /tmp/chorusd-bench ./cmd/chorusd && $(GO) run -tags bench ./cmd/chorus bench startup -chorusd /tmp/chorusd-bench

# 60 s per decoder (issue 2: every decoder fuzzed at least a minute).
FUZZTIME ?= 60s
fuzz:
	for f in $$($(GO) test -list 'Fuzz.*' ./runtime/protocol/ | grep ^Fuzz); do \
	  $(GO) test -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./runtime/protocol/ || exit 1; done
	$(GO) test -run XXX -fuzz '^FuzzDecodeWAV$$' -fuzztime $(FUZZTIME) ./drivers/audio/
	$(GO) test -run XXX -fuzz '^FuzzParseFrame$$' -fuzztime $(FUZZTIME) ./device/bridge/
	$(GO) test -run XXX -fuzz '^FuzzTokens$$' -fuzztime $(FUZZTIME) ./device/robot/
	$(GO) test -run XXX -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./device/robot/
	$(GO) test -run XXX -fuzz '^FuzzSplit$$' -fuzztime $(FUZZTIME) ./drivers/camera/command/
	$(GO) test -run XXX -fuzz '^FuzzReadEvent$$' -fuzztime $(FUZZTIME) ./drivers/wyoming/
	$(GO) test -run XXX -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./drivers/stt/openai/
	$(GO) test -run XXX -fuzz '^FuzzErrorMessage$$' -fuzztime $(FUZZTIME) ./runtime/modelhttp/
	$(GO) test -run XXX -fuzz '^FuzzEvents$$' -fuzztime $(FUZZTIME) ./runtime/modelhttp/
	$(GO) test -run XXX -fuzz '^FuzzAssembler$$' -fuzztime $(FUZZTIME) ./runtime/brain/openai/
	$(GO) test -run XXX -fuzz '^FuzzAssembler$$' -fuzztime $(FUZZTIME) ./runtime/brain/anthropic/
	$(GO) test -run XXX -fuzz '^FuzzPartial$$' -fuzztime $(FUZZTIME) ./runtime/brain/llm/
	$(GO) test -run XXX -fuzz '^FuzzParseOutput$$' -fuzztime $(FUZZTIME) ./drivers/stt/pocketsphinx/
	for f in FuzzDecodeHello FuzzDecodeFrame FuzzDecodeReply; do \
	  $(GO) test -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./drivers/air/ || exit 1; done

# Pure-Go binaries for the boards: arm64 (Pi 4/5, Zero 2 W on a 64-bit OS), armv7, armv6.
dist:
	@mkdir -p dist
	for t in arm64: arm:7 arm:6 amd64:; do \
	  arch=$${t%%:*}; arm=$${t##*:}; suffix=$$arch$${arm:+v$$arm}; \
	  for cmd in chorusd chorus; do \
	    CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$arm $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
	      -o dist/$$cmd-linux-$$suffix ./cmd/$$cmd || exit 1; \
	  done; \
	done
	@ls -l dist

# Debian packages: dist/chorus_VERSION_ARCH.deb for arm64, armhf (ARMv6 code,
# which runs on every 32-bit Raspberry Pi OS) and amd64, made by nfpm from
# systemd/deb/nfpm.yaml: both binaries in /usr/bin, the hardened unit, the
# sysusers entry, firmware-configs/deb-default.yaml as /etc/chorus/chorus.yaml
# (a conffile). nfpm runs through the module proxy; it is not in go.mod.
NFPM        ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
# A release tag vX.Y.Z gives X.Y.Z (X.Y.Z.N.gHASH after it); otherwise 0.0.0+gitHASH.
DEB_VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null) && echo "$${v#v}" | tr - . || echo "0.0.0+git$$(git describe --always --dirty 2>/dev/null | tr - . || echo unknown)")
DEB_ARCHES  ?= arm64 armhf amd64
deb:
	@mkdir -p dist
	for a in $(DEB_ARCHES); do \
	  case $$a in armhf) goarch=arm goarm=6 nfpm=arm6;; *) goarch=$$a goarm= nfpm=$$a;; esac; \
	  b=dist/deb/$$a; mkdir -p $$b || exit 1; \
	  for cmd in chorusd chorus; do \
	    CGO_ENABLED=0 GOOS=linux GOARCH=$$goarch GOARM=$$goarm $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $$b/$$cmd ./cmd/$$cmd || exit 1; \
	  done; \
	  sed 's#/usr/local/bin/chorusd#/usr/bin/chorusd#g' systemd/chorusd.service > $$b/chorusd.service || exit 1; \
	  DEB_ARCH=$$nfpm DEB_VERSION=$(DEB_VERSION) DEB_BUILD=$$b $(NFPM) package --config systemd/deb/nfpm.yaml \
	    --packager deb --target dist/chorus_$(DEB_VERSION)_$$a.deb || exit 1; \
	done
	@ls -l dist/*.deb

# The robot's binary: its stripped size for linux/arm64, and what each module
# costs in code and read-only data (BENCHMARKS.md, "Binary size").
size:
	@mkdir -p dist
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "-s -w" -o dist/chorusd-size-stripped ./cmd/chorusd
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -o dist/chorusd-size-full ./cmd/chorusd
	@ls -l dist/chorusd-size-stripped | awk '{printf "stripped linux/arm64 chorusd: %.1f MB\n", $$5/1e6}'
	@$(GO) tool nm -size -sort size dist/chorusd-size-full | awk -f .ci/modsize.awk | sort -rn | head -15

clean:
	rm -rf dist out
