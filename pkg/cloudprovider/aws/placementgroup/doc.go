// Package placementgroup resolves an EC2NodeClass's placementGroupSelector
// to the one available EC2 placement group it names, as upstream Karpenter
// does: DescribePlacementGroups filtered state=available, by GroupIds when
// the selector has an ID, else by GroupNames; the first group answered is
// the class's. Answers are cached per selector for a minute.
//
// It also holds the pure rules the launch path applies to a resolved
// group: the partition a NodeClaim pins (Partition), the requirements a
// group adds to instance types (Requirements), and which instance types a
// group's strategy admits (Compatible). It imports the EC2 SDK types only,
// behind the one-call interface it declares.
package placementgroup
