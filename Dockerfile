# syntax=docker/dockerfile:1
# Two images from one build:
#   docker build --target webhook   -t mgr-webhook .    (distroless static, nonroot)
#   docker build --target bootstrap -t mgr-bootstrap .  (the Ceph image: it runs the ceph CLI)
# Base images are pinned by tag; pin them by digest in your registry mirror.

# Multi-arch (the release builds linux/amd64 and linux/arm64): Go cross-compiles
# on the build machine's platform; only the final stages run the target's.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
# make docker-build passes git describe and the commit.
ARG VERSION=devel
ARG REVISION=
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN ldflags="-s -w -X github.com/rook-mgr/mgr-webhook/version.Version=${VERSION} -X github.com/rook-mgr/mgr-webhook/version.Revision=${REVISION}" && \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="$ldflags" -o /out/mgr-webhook ./cmd/mgr-webhook && \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="$ldflags" -o /out/mgr-bootstrap ./cmd/mgr-bootstrap

FROM gcr.io/distroless/static-debian12:nonroot AS webhook
COPY --from=build /out/mgr-webhook /mgr-webhook
USER 65532:65532
ENTRYPOINT ["/mgr-webhook"]

# The ceph CLI of the newest release the tests run (Tentacle 20.2.4): the
# controller's CLI must never be older than a cluster it manages (Tentacle's
# keys are of a type older CLIs cannot read). It is Debian's package, the very
# one hack/ceph-release.sh sid installs and make test runs against every
# supported cluster release, Pacific included; pinned by version (move the pin
# with the matrix when sid moves on).
FROM debian:sid-slim AS bootstrap
RUN apt-get update && \
    apt-get install -y --no-install-recommends ceph-common=20.2.4+ds-2 && \
    rm -rf /var/lib/apt/lists/*
COPY --from=build /out/mgr-bootstrap /usr/local/bin/mgr-bootstrap
USER 167:167
ENTRYPOINT ["/usr/local/bin/mgr-bootstrap"]
