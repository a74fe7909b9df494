// The scratch field model-config-field.td adds to a copy of ModelConfig.td,
// in place of the defset's closing line: one declaration.
def : CoreField<"scratch_window", CfgInt, "scratchWindow",
                "a scratch field: declared once, generated everywhere"> {
  let default = "7";
  let familyKey = 1;
}

} // ModelConfigFields
