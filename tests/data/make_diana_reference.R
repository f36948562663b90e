# Reference values of R's cluster::diana for tests/engines/divisive/test_diana_reference.py.
#
# Run by make_diana_reference.py, which writes the inputs and assembles
# tests/data/diana_reference.json; the tests then need no R. Usage:
#   Rscript make_diana_reference.R <input dir> <output dir>
# Each input <name>.txt: a header line "<kind> <metric> <n> <p>" (kind = data or
# dissimilarity), then the n x p values row by row as C99 hexadecimal floats
# (exact in both languages) or NA. Each output <name>.out: merge rows, order,
# height and dc, doubles again as hexadecimal floats.
suppressPackageStartupMessages(library(cluster))
args <- commandArgs(trailingOnly = TRUE)
input_dir <- args[1]
output_dir <- args[2]
for (path in list.files(input_dir, pattern = "\\.txt$", full.names = TRUE)) {
    header <- strsplit(readLines(path, n = 1), " ")[[1]]
    kind <- header[1]; metric <- header[2]
    n <- as.integer(header[3]); p <- as.integer(header[4])
    tokens <- scan(path, what = character(), skip = 1, quiet = TRUE)
    values <- suppressWarnings(as.numeric(tokens))
    x <- matrix(values, nrow = n, ncol = p, byrow = TRUE)
    fit <- if (kind == "dissimilarity") diana(as.dist(x), diss = TRUE)
           else diana(x, metric = metric)
    out <- file.path(output_dir, sub("\\.txt$", ".out", basename(path)))
    lines <- c(paste("merge", apply(fit$merge, 1, paste, collapse = ",")),
               paste("order", paste(fit$order, collapse = ",")),
               paste("height", paste(sprintf("%a", fit$height), collapse = ",")),
               paste("dc", sprintf("%a", fit$dc)),
               paste("version", as.character(packageVersion("cluster"))))
    writeLines(lines, out)
}
