/* catalog.h - named models, hardware, evolution rules and software stacks
 * loaded from the YAML catalogs (sweeps/catalog/{models,hardware,evolutions,
 * stacks}.yaml). The catalog owns
 * its entries; returned pointers are borrowed until catalog_free. */
#ifndef CCSWEEP_CATALOG_H
#define CCSWEEP_CATALOG_H

#include "ccsweep/model/hw.h"
#include "ccsweep/model/model.h"
#include "ccsweep/model/stack.h"
#include "ccsweep/util/ydoc.h"

typedef struct ccs_catalog ccs_catalog;

/* An empty catalog, or NULL when out of memory. */
ccs_catalog *catalog_new(void);
void catalog_free(ccs_catalog *c);

/* Load models.yaml, hardware.yaml, evolutions.yaml and stacks.yaml from dir. Entries whose
 * names already exist are an error. Returns CCS_OK or CCS_EINPUT/CCS_EIO with
 * err naming the file, line, column and field. */
int catalog_load_dir(ccs_catalog *c, const char *dir, ccs_err *err);
int catalog_load_models(ccs_catalog *c, const char *path, ccs_err *err);
int catalog_load_hardware(ccs_catalog *c, const char *path, ccs_err *err);
int catalog_load_evolutions(ccs_catalog *c, const char *path, ccs_err *err);
int catalog_load_stacks(ccs_catalog *c, const char *path, ccs_err *err);

/* Overlay path onto the catalog: a directory with any of models.yaml,
 * hardware.yaml, evolutions.yaml and stacks.yaml, or one YAML file with any
 * of the keys models, hardware, evolutions and stacks. An entry whose name is already in the
 * catalog replaces it (in its place); others are appended. A name repeated
 * within the overlay is an error. Returns CCS_OK or CCS_EINPUT with err. */
int catalog_overlay(ccs_catalog *c, const char *path, ccs_err *err);

/* The layered catalog every command uses, later layers overriding earlier ones
 * by name: the default directory (catalog_default_dir), then each entry of
 * $CCSWEEP_CATALOG_PATH (':'-separated), then overlays[0..n) in order (the
 * --catalog options). */
int catalog_load_layers(ccs_catalog *c, const char *const *overlays, size_t n, ccs_err *err);

/* The default catalog directory: $CCSWEEP_CATALOG, else sweeps/catalog next to
 * the running executable (a build tree), else the installed data directory.
 * Writes into buf (size n) and returns it. */
const char *catalog_default_dir(char *buf, size_t n);

/* Parse one entry (a YAML mapping) in the catalog's format; used for inline
 * entries in sweep specs too. Returns CCS_OK or CCS_EINPUT. */
int catalog_parse_model(const ydoc *d, const ynode *map, ccs_model *out, ccs_err *err);
int catalog_parse_hw(const ydoc *d, const ynode *map, ccs_hw *out, ccs_err *err);
int catalog_parse_evolution(const ydoc *d, const ynode *map, ccs_evolution *out, ccs_err *err);
int catalog_parse_stack(const ydoc *d, const ynode *map, ccs_stack *out, ccs_err *err);

/* Add an entry (copied). CCS_EINPUT when the name exists, CCS_ENOMEM. */
int catalog_add_model(ccs_catalog *c, const ccs_model *m, ccs_err *err);
int catalog_add_hw(ccs_catalog *c, const ccs_hw *hw, ccs_err *err);
int catalog_add_evolution(ccs_catalog *c, const ccs_evolution *ev, ccs_err *err);
int catalog_add_stack(ccs_catalog *c, const ccs_stack *st, ccs_err *err);

/* Lookup by name, NULL when absent. */
const ccs_model *catalog_model(const ccs_catalog *c, const char *name);
const ccs_hw *catalog_hw(const ccs_catalog *c, const char *name);
const ccs_evolution *catalog_evolution(const ccs_catalog *c, const char *name);
const ccs_stack *catalog_stack(const ccs_catalog *c, const char *name);

/* Enumeration in file order. */
size_t catalog_n_models(const ccs_catalog *c);
size_t catalog_n_hw(const ccs_catalog *c);
size_t catalog_n_evolutions(const ccs_catalog *c);
size_t catalog_n_stacks(const ccs_catalog *c);
const ccs_model *catalog_model_at(const ccs_catalog *c, size_t i);
const ccs_hw *catalog_hw_at(const ccs_catalog *c, size_t i);
const ccs_evolution *catalog_evolution_at(const ccs_catalog *c, size_t i);
const ccs_stack *catalog_stack_at(const ccs_catalog *c, size_t i);

#endif
