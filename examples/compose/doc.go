// Package compose holds the topology that docker-compose.yml (at the top of
// the repository) serves: the e-commerce example over the compose file's
// three Postgres services. Its test checks docker-compose.yml and the
// Dockerfile without a Docker engine: every file they name exists, the
// mounted topology validates and names the Postgres services with their
// ports, database and credentials, the loader and the proxy run the
// commands they should in the right order, Prometheus and Grafana point at
// the services they need, the build stage's Go version is go.mod's, and
// the image runs as an unprivileged user.
package compose
