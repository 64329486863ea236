// Package kazoo holds the kazoo (Python ZooKeeper client) compatibility tests: recipes.py runs
// kazoo's recipes and prints a canonical transcript, and the tests (package kazoo_test) require
// Corral's transcript to equal Apache ZooKeeper's.
package kazoo
