// Package sealing seals what the gateway hands out and must later trust
// again, such as an MCP requestState, with the key its instances share:
// AEAD (AES-256-GCM), so that a sealed value can be neither read nor
// altered by whoever holds it.
//
// A fleet seals with the first of its keys and opens with any of them,
// so that keys can be rotated without stopping the fleet: add the new key
// last on every instance, then move it first, then drop the old one once
// nothing sealed with it is still live. Keys come from the operator's
// configuration (ParseKey), or, when it gives none, from FleetKeys, which
// generates one the first time and keeps it in the store, so that every
// instance on one store agrees with no configuration.
//
// A key never leaves a Keys value: it has no method that returns one, and
// it prints, formats and logs as "sealing.Keys{n}" only.
package sealing
