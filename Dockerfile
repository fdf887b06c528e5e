# shardgate's image: docker-compose.yml builds it, `docker build -t shardgate .`
# does too. The first build compiles the SQL parser (pg_query, C, through
# cgo): several minutes on two cores; later builds reuse the module and build
# caches.

# Build stage: the Go version of go.mod (go test ./examples/compose checks
# that they agree).
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# cgo is required (pg_query); the binary is linked statically against glibc,
# with Go's own DNS resolver and user lookup (netgo, osusergo), so that it
# runs on an image without a C library.
ARG VERSION=docker
RUN CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo \
      -ldflags "-s -w -X main.version=${VERSION} -linkmode external -extldflags -static" \
      -o /out/shardgate ./cmd/shardgate

# Run stage: the static binary alone, as an unprivileged user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/shardgate /usr/local/bin/shardgate
USER 65532:65532
EXPOSE 6432 9187
ENTRYPOINT ["/usr/local/bin/shardgate"]
CMD ["serve", "--topology", "/etc/shardgate/topology.yaml", "--metrics", "0.0.0.0:9187"]
