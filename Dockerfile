# Build the tollgate binary (manager, decider and CLI in one static executable).
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
# Stamped into `tollgate version` (make docker-build passes them).
ARG VERSION=dev
ARG COMMIT=

WORKDIR /workspace
# Cache modules before copying the sources.
COPY go.mod go.sum ./
RUN go mod download

COPY cmd/ cmd/
COPY api/ api/
COPY config/ config/
COPY internal/ internal/
COPY pkg/ pkg/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags="-s -w -X github.com/tollgate-dev/tollgate/internal/version.version=${VERSION} -X github.com/tollgate-dev/tollgate/internal/version.commit=${COMMIT}" \
    -o tollgate ./cmd/tollgate

# A minimal, non-root runtime image.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/tollgate /tollgate
USER 65532:65532

ENTRYPOINT ["/tollgate"]
