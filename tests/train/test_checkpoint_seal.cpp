// Checkpoint seals: every checkpoint phalanx writes carries the size and XXH64 of its HDF5 part in
// a 512-byte user block; a byte changed anywhere, a truncation or a damaged seal is refused before
// HDF5 parses the file, a checkpoint from before seals still loads (and can be sealed), and an
// edit on purpose loads again once resealed.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "data/data_test_support.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/checkpoint_seal.hpp"
#include "support/test_support.hpp"
#include "train/checkpoint_test_model.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::file_bytes;
using phalanx::testing::ScratchDirectory;
using phalanx::testing::write_bytes;

const std::string mismatch = "contents do not match the seal phalanx wrote";
const std::string hdf5_signature = "\x89HDF\r\n\x1a\n";

struct SmallModel : phalanx::testing::CheckpointTestModel {
  void write(const std::string& path) {
    const TrainingPosition position{7, 1, 2, 7 * 16};
    write_checkpoint(path, *backend, registry, nullptr, position, 1, 5, "name: test\n");
  }
};

// Both readers refuse `path` with a message naming it and containing `expected`.
void expect_refused(const std::string& path, SmallModel& model, const std::string& expected) {
  EXPECT_INPUT_ERROR(read_checkpoint_header(path), path + ": ");
  EXPECT_INPUT_ERROR(read_checkpoint_header(path), expected);
  EXPECT_INPUT_ERROR(load_checkpoint(path, *model.backend, model.registry, nullptr), expected);
}

TEST(CheckpointSeal, AWrittenCheckpointIsSealedAndLoads) {
  ScratchDirectory scratch("checkpoint_seal_written");
  SmallModel model;
  const std::string path = scratch.file("step-7.h5");
  model.write(path);
  const std::string bytes = file_bytes(path);
  ASSERT_GT(bytes.size(), checkpoint_seal_bytes);
  EXPECT_TRUE(bytes.starts_with("phalanx-checkpoint-seal 1\n")) << bytes.substr(0, 40);
  EXPECT_EQ(bytes.substr(checkpoint_seal_bytes, hdf5_signature.size()), hdf5_signature)
      << "the HDF5 part starts after the user block";
  const SealCheck check = check_checkpoint_seal(path);
  EXPECT_EQ(check.state, SealState::Sealed);
  EXPECT_EQ(check.seal.covered_bytes, bytes.size() - checkpoint_seal_bytes);
  EXPECT_EQ(bytes.substr(0, checkpoint_seal_bytes), seal_block(check.seal));
  EXPECT_EQ(read_checkpoint_header(path).position.global_step, 7);
  EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
  // HDF5 itself sees a 512-byte user block (h5py reports it as userblock_size).
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t creation = H5Fget_create_plist(file);
  hsize_t user_block = 0;
  EXPECT_GE(H5Pget_userblock(creation, &user_block), 0);
  EXPECT_EQ(user_block, checkpoint_seal_bytes);
  H5Pclose(creation);
  H5Fclose(file);
}

TEST(CheckpointSeal, AByteChangedAnywhereAfterTheUserBlockIsRefused) {
  ScratchDirectory scratch("checkpoint_seal_flipped");
  SmallModel model;
  const std::string original = scratch.file("original.h5");
  model.write(original);
  const std::string bytes = file_bytes(original);
  // Every 61st byte of the HDF5 part, and its first and last: superblock, object headers, heaps,
  // attribute messages and weights alike.
  const std::string path = scratch.file("flipped.h5");
  int checked = 0;
  for (std::size_t offset = checkpoint_seal_bytes; offset < bytes.size(); offset += 61) {
    for (const std::size_t target : {offset, bytes.size() - 1}) {
      std::string flipped = bytes;
      flipped[target] = static_cast<char>(flipped[target] ^ 0x01);
      write_bytes(path, flipped);
      SCOPED_TRACE("byte " + std::to_string(target));
      EXPECT_INPUT_ERROR(read_checkpoint_header(path), path + ": the checkpoint's " + mismatch);
      EXPECT_INPUT_ERROR(check_checkpoint_seal(path), mismatch);
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
  // The same file undamaged loads: the refusals were the flips'.
  write_bytes(path, bytes);
  EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
}

// One damage done to a good checkpoint's bytes, and the refusal it must meet.
struct Damage {
  const char* name;
  std::string (*damage)(const std::string& good);    // the damaged file's bytes
  std::string (*expected)(const std::string& good);  // what both readers' messages contain
  bool names_the_reseal_command;                     // the refusal says how to accept an edit on purpose
};

std::string flip_bits(const std::string& bytes, std::size_t offset, char bits) {
  std::string flipped = bytes;
  flipped[offset] = static_cast<char>(flipped[offset] ^ bits);
  return flipped;
}

// A character of the seal's text changed to another that keeps the line parseable.
std::string change_character(const std::string& bytes, std::size_t offset) {
  std::string changed = bytes;
  changed[offset] = changed[offset] == '1' ? '2' : '1';
  return changed;
}

std::string size_refusal(std::size_t size, std::size_t good_size) {
  return "the checkpoint is " + std::to_string(size) + " bytes but the seal phalanx wrote says " +
         std::to_string(good_size);
}

const Damage damages[] = {
    {"HighBitOfTheMiddleByte",
     [](const std::string& good) { return flip_bits(good, good.size() / 2, '\x80'); },
     [](const std::string&) { return mismatch; }, true},
    {"CutByOneByte", [](const std::string& good) { return good.substr(0, good.size() - 1); },
     [](const std::string& good) { return size_refusal(good.size() - 1, good.size()); }, true},
    {"CutInHalf", [](const std::string& good) { return good.substr(0, good.size() / 2); },
     [](const std::string& good) { return size_refusal(good.size() / 2, good.size()); }, true},
    {"CutJustAfterTheSeal", [](const std::string& good) { return good.substr(0, checkpoint_seal_bytes + 8); },
     [](const std::string& good) { return size_refusal(checkpoint_seal_bytes + 8, good.size()); }, true},
    {"OneByteLonger", [](const std::string& good) { return good + std::string(1, '\0'); },
     [](const std::string& good) { return size_refusal(good.size() + 1, good.size()); }, true},
    {"CutInsideTheSeal", [](const std::string& good) { return good.substr(0, 300); },
     [](const std::string&) {
       return std::string("the checkpoint's seal (its first 512 bytes) is truncated");
     },
     false},
    // In the hash's digits, in the byte count, and in the zeros that fill the block.
    {"SealHashDigitChanged",
     [](const std::string& good) { return change_character(good, good.find("xxh64 ") + 8); },
     [](const std::string&) { return mismatch; }, true},
    {"SealByteCountDigitChanged",
     [](const std::string& good) { return change_character(good, good.find("covered-bytes ") + 14); },
     [](const std::string&) { return std::string("bytes but the seal phalanx wrote says"); }, true},
    {"SealPaddingChanged",
     [](const std::string& good) { return change_character(good, checkpoint_seal_bytes - 1); },
     [](const std::string&) { return std::string("the checkpoint's seal (its first 512 bytes) is damaged"); },
     true},
    // A seal's first line damaged: neither a seal nor HDF5 from the first byte.
    {"SealFirstLineChanged",
     [](const std::string& good) {
       std::string damaged = good;
       damaged[0] = 'P';
       return damaged;
     },
     [](const std::string&) { return std::string("not an HDF5 checkpoint (or truncated)"); }, false},
    {"SealOfAnotherVersion",
     [](const std::string& good) {
       std::string damaged = good;
       damaged[24] = '2';  // "phalanx-checkpoint-seal 2"
       return damaged;
     },
     [](const std::string&) {
       return std::string("the checkpoint's seal is of a version this build does not read");
     },
     false},
};

// Names a case by its name in test listings (GoogleTest prints its bytes otherwise).
void PrintTo(const Damage& damage, std::ostream* stream) {
  *stream << damage.name;
}

class CheckpointSealDamage : public ::testing::TestWithParam<Damage> {};

TEST_P(CheckpointSealDamage, IsRefusedByBothReaders) {
  const Damage& damage = GetParam();
  ScratchDirectory scratch(std::string("checkpoint_seal_") + damage.name);
  SmallModel model;
  const std::string original = scratch.file("original.h5");
  model.write(original);
  const std::string good = file_bytes(original);
  const std::string path = scratch.file("damaged.h5");
  write_bytes(path, damage.damage(good));
  expect_refused(path, model, damage.expected(good));
  if (damage.names_the_reseal_command)
    EXPECT_INPUT_ERROR(load_checkpoint(path, *model.backend, model.registry, nullptr),
                       "`phalanx checkpoint seal " + path + "`");
}

INSTANTIATE_TEST_SUITE_P(CheckpointSeal, CheckpointSealDamage, ::testing::ValuesIn(damages),
                         [](const ::testing::TestParamInfo<Damage>& info) {
                           return std::string(info.param.name);
                         });

TEST(CheckpointSeal, ACheckpointFromBeforeSealsStillLoads) {
  ScratchDirectory scratch("checkpoint_seal_unsealed");
  SmallModel model;
  const std::string sealed = scratch.file("sealed.h5");
  model.write(sealed);
  // Without its user block the file is what checkpoints were before seals: HDF5 from byte 0.
  const std::string path = scratch.file("unsealed.h5");
  write_bytes(path, file_bytes(sealed).substr(checkpoint_seal_bytes));
  EXPECT_EQ(check_checkpoint_seal(path).state, SealState::Unsealed);
  EXPECT_EQ(read_checkpoint_header(path).position.global_step, 7);
  EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
  // `phalanx checkpoint seal` puts a user block in front: HDF5 finds the file after it.
  const CheckpointSeal seal = reseal_checkpoint(path);
  EXPECT_EQ(seal.covered_bytes, std::filesystem::file_size(sealed) - checkpoint_seal_bytes);
  EXPECT_EQ(check_checkpoint_seal(path).state, SealState::Sealed);
  EXPECT_EQ(read_checkpoint_header(path).position.global_step, 7);
  EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
}

TEST(CheckpointSeal, AnEditOnPurposeLoadsAgainOnceResealed) {
  ScratchDirectory scratch("checkpoint_seal_edited");
  SmallModel model;
  const std::string path = scratch.file("step-7.h5");
  model.write(path);
  {
    // As h5py in r+ mode would: HDF5 keeps the user block and its stale seal.
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t dataset = H5Dopen2(file, "/state/epoch", H5P_DEFAULT);
    const std::int64_t epoch = 4;
    EXPECT_GE(H5Dwrite(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &epoch), 0);
    H5Dclose(dataset);
    H5Fclose(file);
  }
  expect_refused(path, model, mismatch);
  const CheckpointSeal seal = reseal_checkpoint(path);
  EXPECT_EQ(seal.covered_bytes, std::filesystem::file_size(path) - checkpoint_seal_bytes);
  EXPECT_EQ(check_checkpoint_seal(path).state, SealState::Sealed);
  EXPECT_EQ(read_checkpoint_header(path).position.epoch, 4);
  EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(scratch.file(""))) ++files;
  EXPECT_EQ(files, 1);
}

TEST(CheckpointSeal, AFileThatIsNeitherSealedNorHdf5IsRefused) {
  ScratchDirectory scratch("checkpoint_seal_other");
  SmallModel model;
  const std::string path = scratch.file("notes.h5");
  write_bytes(path, "name: not a checkpoint\n");
  expect_refused(path, model, "not an HDF5 checkpoint (or truncated)");
  EXPECT_INPUT_ERROR(reseal_checkpoint(path), "not a sealable checkpoint");
}

// Sealed through a link, the file it names is sealed and the link stays a link (it was replaced by
// a copy); the file keeps its mode (a private checkpoint became world-readable).
TEST(CheckpointSeal, ALinkStaysALinkAndTheFileKeepsItsMode) {
  ScratchDirectory scratch("checkpoint_seal_link_mode");
  SmallModel model;
  const std::string sealed = scratch.file("sealed.h5");
  model.write(sealed);
  const std::string path = scratch.file("private.h5");
  write_bytes(path, file_bytes(sealed).substr(checkpoint_seal_bytes));  // unsealed: HDF5 from byte 0
  std::filesystem::permissions(path,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string link = scratch.file("link.h5");
  std::filesystem::create_symlink("private.h5", link);
  reseal_checkpoint(link);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(check_checkpoint_seal(path).state, SealState::Sealed);
  EXPECT_EQ(std::filesystem::status(path).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

// HDF5 that says it is something else (a dataset, a predictions file) was sealed, and `verify`
// passed it from then on: it is refused and left as it was, with no temporary file. A damaged
// checkpoint is sealed as asked (an edit on purpose); loading it names the damage.
TEST(CheckpointSeal, OnlyACheckpointPhalanxCanOpenIsSealed) {
  ScratchDirectory scratch("checkpoint_seal_only_checkpoints");
  const std::string dataset = scratch.file("data.h5");
  const data::Split train = testing::make_split("train", 10, 2, 2, 1, 10, 1);
  const data::Split test = testing::make_split("test", 5, 2, 2, 1, 10, 2);
  data::write_dataset(dataset, {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, {&train, &test});
  const std::string before = file_bytes(dataset);
  EXPECT_INPUT_ERROR(reseal_checkpoint(dataset),
                     dataset + ": not sealed: its format is 'phalanx-dataset', not a phalanx checkpoint");
  EXPECT_EQ(file_bytes(dataset), before);
  SmallModel model;
  const std::string checkpoint = scratch.file("cut.h5");
  model.write(checkpoint);
  const std::string bytes = file_bytes(checkpoint);
  write_bytes(checkpoint, bytes.substr(checkpoint_seal_bytes, bytes.size() / 2));  // HDF5 from byte 0, cut
  EXPECT_NO_THROW(reseal_checkpoint(checkpoint));
  EXPECT_INPUT_ERROR(read_checkpoint_header(checkpoint), "cut.h5: ");
  for (const auto& entry : std::filesystem::directory_iterator(scratch.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace phalanx::train
