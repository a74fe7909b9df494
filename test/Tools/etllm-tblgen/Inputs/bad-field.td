// A field the generator refuses (BAD_KIND, BAD_DUP, BAD_IRONLY of
// model-config-field.td), in place of the defset's closing line.
#ifdef BAD_KIND
def : ConfigField<"scratch_name", CfgString, "scratchName", "a string"> {
  let familyKey = 1;
}
#endif
#ifdef BAD_DUP
def : ConfigField<"hidden_size", CfgInt, "scratchHidden", "again">;
#endif
#ifdef BAD_IRONLY
def : CoreField<"scratch_bound", CfgInt, "", "in the IR only">;
#endif

} // ModelConfigFields
