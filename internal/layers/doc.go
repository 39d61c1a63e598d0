// Package layers holds no code. Its test checks every package's imports
// against the layer table of docs/architecture.md: a package imports only
// lower layers (and the same-layer imports the document lists), every
// package of the module has a layer, and nothing imports cmd/.
package layers
