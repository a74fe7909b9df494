# The backends built into etllm: the one list (docs/AddingABackend.md).
#
# An entry `id:Name` stands for a backend's two folders and how each side
# registers it; nothing else names a built-in backend:
#   compiler half  lib/Backends/<Name>/      library EtllmBackend<Name>,
#                  registers with etllm::register<Name>BackendCompiler()
#   runtime half   runtime/backends/<id>/    library etllm_<id>, declares
#                  etllm::rt::<id>::register<Name>Backend() in
#                  etllm/runtime/<id>/backend.h
# A half may leave itself out of a build (the Vulkan runtime half without
# the Vulkan SDK): its folder then defines no library and the registration
# skips it. Out-of-tree backends are not listed: `etllm-export --plugin`
# loads their compiler half (include/etllm/Target/Plugin.h).
set(ETLLM_BACKENDS cpu:Cpu vulkan:Vulkan)

# etllm_backend_fields(ENTRY ID NAME): splits one entry.
function(etllm_backend_fields entry id_var name_var)
  string(REPLACE ":" ";" parts "${entry}")
  list(LENGTH parts n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "cmake/Backends.cmake: '${entry}' is not id:Name")
  endif()
  list(GET parts 0 id)
  list(GET parts 1 name)
  set(${id_var} ${id} PARENT_SCOPE)
  set(${name_var} ${name} PARENT_SCOPE)
endfunction()

# etllm_write_backend_registration(SIDE FILE TARGET): writes FILE, the body
# of the registration function of SIDE (compiler or runtime) for every
# listed backend whose library of that side exists, and links TARGET to
# those libraries. Call it after the backends' folders are added.
function(etllm_write_backend_registration side file target)
  set(decls "")
  set(calls "")
  foreach(entry ${ETLLM_BACKENDS})
    etllm_backend_fields(${entry} id name)
    if(side STREQUAL "compiler")
      set(lib EtllmBackend${name})
      if(NOT TARGET ${lib})
        continue()
      endif()
      string(APPEND decls "namespace etllm { void register${name}BackendCompiler(); }\n")
      string(APPEND calls "  ::etllm::register${name}BackendCompiler();\n")
    else()
      set(lib etllm_${id})
      if(NOT TARGET ${lib})
        continue()
      endif()
      string(APPEND decls "#include \"etllm/runtime/${id}/backend.h\"\n")
      string(APPEND calls "  ::etllm::rt::${id}::register${name}Backend();\n")
    endif()
    target_link_libraries(${target} PUBLIC ${lib})
  endforeach()
  set(text "// Generated from cmake/Backends.cmake: do not edit.\n${decls}")
  string(APPEND text "static void registerListedBackends() {\n${calls}}\n")
  file(GENERATE OUTPUT ${file} CONTENT "${text}")
endfunction()
