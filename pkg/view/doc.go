// Package view is the live terminal view `karp run` shows: one row per
// Node (name, NodePool, instance type, zone, capacity type, $/hour, pods,
// cpu and memory requested against allocatable), the pods still pending,
// and the cluster's total $/hour.
//
// Build turns Nodes and Pods into a Snapshot and Render draws it, both
// pure; Watch feeds them from informers and redraws at most a few times a
// second, only when something changed. Prices come from the instance-type
// catalog the kwok provider launches from (NewPriceTable), so the view's
// $/hour is what the provider charged for each offering.
//
// The view only reads the cluster; it must not import pkg/controllers.
package view
