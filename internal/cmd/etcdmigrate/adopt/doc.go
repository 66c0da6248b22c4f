// Package adopt executes the nine adoption steps of a plan (docs/migration.md, "Adoption
// steps"). Every step first reads what exists and writes only what is missing, so a run stopped
// between any two writes is completed by the next one, and a run over a finished adoption writes
// nothing. The decisions "is this step done for this object" are pure functions (decide.go).
package adopt
