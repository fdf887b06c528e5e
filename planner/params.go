package planner

// Type OIDs the planner reads parameters by (src/include/catalog/pg_type.dat).
const (
	oidBool    = 16
	oidName    = 19
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidFloat4  = 700
	oidFloat8  = 701
	oidUnknown = 705
	oidBpchar  = 1042
	oidVarchar = 1043
	oidNumeric = 1700
	oidUUID    = 2950
)
