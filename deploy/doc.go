// Package deploy holds what an operator runs Corral with besides the binary: the container
// image (Dockerfile, built FROM scratch by `make image`), a 3-server compose file with its
// zoo.cfg files (conf/), the Prometheus scrape configuration and alert rules (prometheus/) and
// the Grafana dashboard (grafana/). docs/operations.md ("Dashboards, alerts and containers")
// describes them.
//
// The package has no code, only tests that keep those files true to the server:
// every metric the alert rules and the dashboard read is one a running server exports (or
// declares, for a labelled metric that has seen no event yet), and the alert rules pass
// promtool's check and the unit tests in prometheus/alerts_test.yaml; the compose ensemble,
// built from the image, serves (where a Docker engine and docker-compose are installed).
package deploy
