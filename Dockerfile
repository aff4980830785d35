# syntax=docker/dockerfile:1
# mombot's container image: a static binary on an empty base with the CA
# certificates (for api.anthropic.com and graph.facebook.com), run as a
# non-root user, with its data in the /app/data volume. See docs/deploying.md.

# Build stage: a static binary (pure Go: the SQLite driver is modernc's,
# no cgo), stamped with the VCS revision when the context is a git checkout.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags="-s -w" -o /out/mombot ./cmd/mombot
# The runtime stage has no shell or mkdir: the data folder and the user's
# entry are made here and copied over.
RUN mkdir -p /out/app/data && chown 65532:65532 /out/app/data && \
    echo 'mombot:x:65532:65532:mombot:/app:/sbin/nologin' > /out/passwd && \
    echo 'mombot:x:65532:' > /out/group

# Runtime stage: the binary, the CA certificates, the user, nothing else.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build /out/mombot /usr/local/bin/mombot
COPY --from=build --chown=65532:65532 /out/app /app
USER 65532:65532
WORKDIR /app
# mombot keeps its conversations, inbox and lists in /app/data when it
# exists (README: --store).
VOLUME ["/app/data"]
ENV MOMBOT_LISTEN=:8080 MOMBOT_LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/mombot", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/mombot"]
CMD ["serve"]
