// Package instancetypes embeds the catalog the kwok provider offers by
// default: 1,364 EC2 instance types with their Karpenter labels,
// allocatable (AL2023 overheads) and us-east-1 Linux on-demand prices, in
// the catalog format of pkg/catalog. The file's "source" field says where
// the data comes from. It lists no offerings: pkg/catalog derives on-demand
// and spot offerings per zone from the on-demand price.
package instancetypes

import _ "embed"

// EC2 is the raw catalog JSON (aws-instance-types.json).
//
//go:embed aws-instance-types.json
var EC2 []byte

// EC2Count is how many instance types EC2 lists.
const EC2Count = 1364
