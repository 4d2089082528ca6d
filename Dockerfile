# syntax=docker/dockerfile:1
# infscale's image: `make image` (docker with BuildKit, podman or buildah,
# and access to the golang and gcr.io/distroless base images and the Go
# module proxy).
# Stage 1 builds a static binary (no cgo, -trimpath, stripped, version and
# revision linked in since the build context has no .git); stage 2 is
# distroless static, non-root (uid 65532, as deploy/ and the chart run it).
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=devel
ARG REVISION=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X main.buildVersion=${VERSION} -X main.buildRevision=${REVISION}" \
      -o /out/infscale ./cmd/recommender

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=devel
ARG REVISION=
ARG CREATED=
LABEL org.opencontainers.image.title="infscale" \
      org.opencontainers.image.description="Replica recommendations for LLM inference servers from running + waiting, queue wait, KV cache and TTFT; exports infscale_desired_replicas for KEDA or the HPA" \
      org.opencontainers.image.source="https://github.com/infscale/infscale" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/infscale /usr/local/bin/infscale
USER 65532:65532
EXPOSE 9105
ENTRYPOINT ["/usr/local/bin/infscale"]
CMD ["serve", "--config=/etc/infscale/infscale.yaml"]
