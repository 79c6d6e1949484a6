# syntax=docker/dockerfile:1
# Two images from one build:
#   docker build --target webhook   -t mgr-webhook .    (distroless static, nonroot)
#   docker build --target bootstrap -t mgr-bootstrap .  (Ceph's release image: it runs the ceph CLI)
# Base images are pinned by tag here; the release workflow pins the Ceph image
# by digest, and you may pin the others by digest in your registry mirror.

# Multi-arch (the release builds linux/amd64 and linux/arm64): Go cross-compiles
# on the build machine's platform; only the final stages run the target's.
ARG CEPH_IMAGE=quay.io/ceph/ceph:v20.2.4
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
ARG VERSION=devel
ARG REVISION=
LABEL org.opencontainers.image.title="mgr-webhook" \
      org.opencontainers.image.description="Admission webhook that completes and judges Ceph mgr Deployments" \
      org.opencontainers.image.source="https://github.com/rook-mgr/mgr-webhook" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/mgr-webhook /mgr-webhook
USER 65532:65532
ENTRYPOINT ["/mgr-webhook"]

# The controller's image is Ceph's own release image, as Rook's operator image
# is: a supported base (Ceph's upstream builds and patches it) whose ceph CLI
# and rados binding are the newest release the tests run (Tentacle 20.2.4):
# the controller's CLI must never be older than a cluster it manages
# (Tentacle's keys are of a type older CLIs cannot read). make test runs the
# same release's CLI (hack/ceph-release.sh sid) against every supported
# cluster release, Pacific included. The release workflow pins it by digest
# (--build-arg CEPH_IMAGE=<this tag>@sha256:...); move the tag with the matrix.
FROM ${CEPH_IMAGE} AS bootstrap
ARG CEPH_IMAGE
ARG VERSION=devel
ARG REVISION=
# Ceph's image carries its own labels; these name this image instead.
LABEL org.opencontainers.image.title="mgr-bootstrap" \
      org.opencontainers.image.description="Controller that bootstraps Ceph mgr Deployments: keyrings, Services, modules" \
      org.opencontainers.image.source="https://github.com/rook-mgr/mgr-webhook" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${CEPH_IMAGE}"
COPY --from=build /out/mgr-bootstrap /usr/local/bin/mgr-bootstrap
USER 167:167
ENTRYPOINT ["/usr/local/bin/mgr-bootstrap"]
