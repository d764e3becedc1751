// Package faulttest holds pace's fault-injection tests: a batch through
// pace.Transport against an upstream behind toxiproxy
// (github.com/Shopify/toxiproxy/v2, run in-process on loopback), which
// resets connections and delays responses. It is a module of its own so
// that toxiproxy's dependencies (Prometheus, zerolog, gorilla/mux) never
// reach pace's users; .ci/run vets and tests it with -race. It has no API.
package faulttest
